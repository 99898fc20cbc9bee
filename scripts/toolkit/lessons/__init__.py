"""The course's lessons as the lab holds projects to them: lessons.toml, the snapshots, a project's suite.

- spec: lessons.toml: its lessons (`find_lesson`), the shape of their commands' figures, a lesson command run, and
  run once more on a timing miss (`once_more_on_a_timing_miss`)
- student_files: which files of a project are the student's (scripts.snapshots)
- snapshots_readme: snapshots/README.md, written from lessons.toml (its end, scripts.check's, in
  snapshots_check.md)
- settings_readme: a README's settings table, written from its project's settings, and .env.example held to it
- unused_names: what a project defines that nothing in it uses
- references: the paths and modules a project's files name that it does not have
- suites: a project's own test suite, run as a student runs it: its count and its failures, from pytest's report
"""
