"""`attention-zoo demo`: every application trained, exported, reloaded and
served in one command (see `attention_zoo_apps.demo.run`)."""
