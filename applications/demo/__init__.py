"""`attention-zoo demo`: every application trained, exported, reloaded and
served in one command (see `applications.demo.run`)."""
