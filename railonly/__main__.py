from railonly.cli import main

raise SystemExit(main())
