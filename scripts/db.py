"""Set up the lab's database: `python -m scripts.db init | status | start | stop`."""

from scripts.toolkit import dataset
from scripts.toolkit.cli import CommandError, command_parser, progress, run
from scripts.toolkit.databases import init, postgres_server, status
from ticket_api.config import load_settings
from ticket_api.instruments.connections import shown_dsn


def main() -> int:
    """Parse the command line and run one subcommand."""
    parser = command_parser("python -m scripts.db", __doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    init_parser = commands.add_parser("init", help="create the schema and load a data set (idempotent)")
    init_parser.add_argument(
        "--size",
        choices=sorted(dataset.SIZES),
        default="small",
        help="small: 300 customers, 3,000 tickets; large: 2,000 customers, 30,000 tickets",
    )
    init_parser.add_argument("--reset", action="store_true", help="delete every row first, then load")
    commands.add_parser("status", help="print the server used (no password) and the row counts")
    commands.add_parser("start", help="start the embedded server (after a crash, say) and leave it running")
    commands.add_parser("stop", help="stop the embedded server now (it restarts on next use)")
    args = parser.parse_args()

    database_url = load_settings().database_url
    if args.command in ("start", "stop") and database_url:
        raise CommandError(f"DATABASE_URL is set: that server is not the lab's to {args.command}")
    if args.command == "stop":
        from ticket_api.instruments.embedded import stop_embedded

        print("stopped the embedded PostgreSQL" if stop_embedded() else "the embedded PostgreSQL was not running")
        return 0
    with postgres_server(database_url, keep_running=args.command == "start") as dsn:
        if args.command == "start":
            print(f"the embedded PostgreSQL runs ({shown_dsn(dsn)}) until `python -m scripts.db stop`")
        elif args.command == "init":
            progress(f"database: {shown_dsn(dsn)}")
            print(init(dsn, args.size, args.reset))
        else:
            print("\n".join(status(dsn)))
    return 0


if __name__ == "__main__":
    run(main)
