"""Leagues: ratings of many agents from their matches (`ratings`), and a league that trains itself (`settings`,
`schedule`, `jobs`, `tables`, `driver`): main agents, exploiters and prioritized matchmaking over a directory of
files that any interruption leaves whole."""
