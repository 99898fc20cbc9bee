"""The lab's commands: `python -m scripts.<name> --help`."""
