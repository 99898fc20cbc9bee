"""What the lab's own commands share beyond cli.py: their options and argparse types, their output folders, the
clock of their progress lines.

- options: argparse types, `output_folder`, `Clock`
"""
