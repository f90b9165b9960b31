"""What joust does, without HTTP: tournaments and their rounds, boards and their caches, votes,
history, imports and exports. The web layer, the scheduler and the CLI call these; they call
the store and the pure domain (`leaderboard/`)."""
