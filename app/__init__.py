"""Attention Atlas web app (FastAPI)."""
