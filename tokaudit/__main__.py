from tokaudit.cli.app import main

main()
