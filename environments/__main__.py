from environments.cli import main

raise SystemExit(main())
