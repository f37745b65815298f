"""The position area of the API: router (routes), schemas (bodies), handler (work)."""
