"""A throwaway PostgreSQL server for tests and benchmarks of `progsum.store._postgres`.

``with running_server() as server: url = server.database()`` starts a cluster with the local
PostgreSQL binaries (Debian: ``apt-get install postgresql``) in a temporary directory, listening
on a Unix socket only (no TCP: tests still touch no network) and trusting local connections, and
stops and deletes it afterwards. `PostgresServer.database` creates a database owned by the role
``progsum``, which is not a superuser, as a fleet's application role is not. As root, the server
runs as the ``postgres`` user (PostgreSQL refuses to run as root). The binaries are found through
``PROGSUM_PG_BIN``, ``/usr/lib/postgresql/*/bin`` or ``PATH``. Needs the ``postgres`` extra.

Fault tests use `PostgresServer.restart` (``pg_ctl restart -m immediate`` or ``-m fast``) and
`PostgresServer.terminate` (``pg_terminate_backend`` of every session of a role).
"""

from progsum.testing._postgres import ROLE, PostgresServer, running_server

__all__ = ["ROLE", "PostgresServer", "running_server"]
