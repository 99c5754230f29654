"""Safe files, shared by every writer and reader of the harness: size-capped reads
(`bundle_files`), strict YAML with no aliases or duplicate keys (`strict_yaml`), atomic writes
(`atomic`), the one-writer-per-bundle lock (`bundle_lock`), and the scratch folders a killed
writer leaves behind, with the processes that own them (`stale_folders`, `process_owner`).

May import: the standard library and third-party packages only; nothing else of ``replay``."""
