"""`openlab demo`: the whole lab lifecycle on embedded defaults (see bot.demo.script)."""
