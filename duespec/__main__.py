from duespec.cli import main

raise SystemExit(main())
