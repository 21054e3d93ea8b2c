"""Where runs are kept: one typed case record and one run store, a folder or a database."""
