"""Drawing and printing what the tools measured.

- charts: the timeline of a stall run, compare's /health medians, capacity's tickets per second, client_cpu's
  clients (`draw_client_cpu`)
- held_chart: what the server held during a recorded run: its peaks in one line, and its chart
- bench_report, compare_table, capacity_table and kitchens_report: the bench's, compare's, capacity's and
  kitchens' tables and files
- text: plain-text tables (`format_table`), milliseconds for people (`fmt_ms`, `readable_ms`)
- course_figures: the course's published figures (course.toml)
"""
