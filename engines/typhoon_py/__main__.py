from typhoon_py.cli import main

main()
