"""Blueprints, one per audience: the dashboard for people, public serving for crawlers, the API."""
