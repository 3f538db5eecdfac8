# The unrendered package below is not a test suite of this repository: its
# test file only works once cookiecutter has filled in the names and the
# package is installed (tests/test_template.py does both). Keep pytest's
# collection of `plugins/` out of it.
collect_ignore = ["{{cookiecutter.distribution_name}}"]
