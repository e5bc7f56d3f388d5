from clkt.cli import main

main()
