from benchlab.cli import main

main()
