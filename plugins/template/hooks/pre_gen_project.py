"""Refuse template variables that would render a package pip or Python cannot use."""

import keyword
import re
import sys

VALUES = {
    "plugin_name": "{{ cookiecutter.plugin_name }}",
    "distribution_name": "{{ cookiecutter.distribution_name }}",
    "package_name": "{{ cookiecutter.package_name }}",
    "algorithm_name": "{{ cookiecutter.algorithm_name }}",
}

# Entry point and algorithm names end up in `rlengine plugins`, on the command
# line and as TOML section names: keep them to one plain word.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# PEP 508 distribution names.
DISTRIBUTION = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")


def problems(values):
    package = values["package_name"]
    if not package.isidentifier() or keyword.iskeyword(package):
        yield f"package_name {package!r} is not a Python identifier; use letters, digits and '_'"
    if not DISTRIBUTION.match(values["distribution_name"]):
        yield f"distribution_name {values['distribution_name']!r} is not a valid pip name; use letters, digits, '-'"
    for key in ("plugin_name", "algorithm_name"):
        if not NAME.match(values[key]):
            yield f"{key} {values[key]!r} must be one word of letters, digits, '_', '-' or '.'"


def main():
    found = list(problems(VALUES))
    for problem in found:
        print(f"rlengine template: error: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
