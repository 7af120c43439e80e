"""Builders of downstream tasks from package data, for the studies."""
