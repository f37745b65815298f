"""The heads area of the API: router (routes), schemas (bodies), handler (work)."""
