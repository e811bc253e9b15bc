"""Command-line tools built on the domain and the services (resolve, audit, demo)."""
