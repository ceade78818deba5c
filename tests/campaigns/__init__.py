"""Reproducible fuzzing campaigns (SQL against PostgreSQL 15, streams across kill -9); see README, Testing."""
