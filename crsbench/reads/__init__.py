"""Read models: what the leaderboard, status, the reporting card and the report show, read from
the warehouse's views into plain frames and dataclasses. They render nothing: `crsbench.report`
draws them and `crsbench.cli` prints them."""
