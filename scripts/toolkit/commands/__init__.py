"""What the lab's own commands share beyond cli.py: their options and argparse types, their output folders, the
clock of their progress lines.

- options: the shared options, each declared once (`add_json`, `add_out`, `add_speed`, `add_loop`, `add_duration`,
  `add_passes`, `add_workers`, `add_no_held`), argparse types, `output_folder`, `Clock`
"""
