"""Drawing and printing what the tools measured.

- charts: the timeline of a stall run, compare's /health medians, capacity's tickets per second
- held_chart: what the server held during a recorded run: its peaks in one line, and its chart
- bench_report, compare_table and capacity_table: the bench's, compare's and capacity's tables and files
- course_figures: the course's published figures (course.toml)
"""
