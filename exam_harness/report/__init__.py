"""Reports: the rich terminal leaderboard, the JSON report and qrels files."""
