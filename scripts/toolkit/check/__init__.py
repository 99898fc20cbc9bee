"""scripts.check: a student's project held to the lesson's promises, in plain words.

- checks: checks run in order, check50's way, with their dependencies and a second run of a timing check
- lesson_checks: a lesson's checks, built from lessons.toml
- context: what one run of the checker shares, started when first needed
- student_api: the student's API and the lab's simulator on the check's Stack, a lesson command run against them,
  what PostgreSQL and the simulator see meanwhile, and why the API did not start, in one line
- student_project: a student's project: its lesson files, its settings, its PostgreSQL
- loop_sampler: where a project's API held its event loop, and why it did not start, told as values from the API's
  own process
- report: the report in plain words or JSON (the hints in hints.toml), a lesson command's figures and where the
  event loop was held, in words
"""
