"""{{ cookiecutter.description }}."""

__version__ = "{{ cookiecutter.version }}"
