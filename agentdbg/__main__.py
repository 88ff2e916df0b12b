from agentdbg.cli import main

raise SystemExit(main())
