"""Reading what a run did, from outside the API's code.

- cpu: a process tree's CPU time (read nowhere else), the CPU of each process by role over a window, and the machine's
  pace
- profile: py-spy's samples of the API
- rates: what /metrics says between two scrapes (the loop's lag, tickets and connections per second), the
  watchdog's lines of the same window, the simulator's stats
- held_series: what the server holds, several times a second (scripts.watch live; compare and capacity recorded),
  and a recording's peaks
- meanwhile: a run watched from a thread of its own while it blocks this one (`in_thread`), the lesson's polling
  there (`polled_in_thread`)
- database_state: what the tools read of PostgreSQL's state: the tickets a run saved, the connections it holds
- quantiles: the one quantile function, the run to draw at a figure's median (`middle_run`), and the most (start,
  end) intervals at once (the median of figures over passes is the lesson's own, in scripts/stall.py)
"""
