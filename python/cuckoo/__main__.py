"""``python -m cuckoo``: the ``cuckoo`` command line (see ``cuckoo.cli``)."""

from .cli import main

raise SystemExit(main())
