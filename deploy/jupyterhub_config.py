# JupyterHub for a class on agentos-kernel (docs/jupyterhub.md explains every line; the test
# tests/test_jupyterhub.py starts a hub with this very file).
#
#     jupyterhub -f deploy/jupyterhub_config.py
#
# Each student logs in, gets a single-user Jupyter server whose home directory is their own
# agentos workspace (`agentos init`), and, when AGENTOS_HUB_PG_ADMIN_DSN is set, their own
# PostgreSQL role in AGENTOS_PG_DSN: their sessions go to the class database, where row-level
# security shows each student only their own and the instructor role all of them.
#
# Settings, from the hub's environment:
#   AGENTOS_HUB_DIR            the hub's state: its sqlite db, cookie secret, and homes/<user>
#   AGENTOS_HUB_IP, _PORT      where students connect (default 127.0.0.1:8000)
#   AGENTOS_HUB_INTERNAL_PORT  the hub's own API port behind the proxy (default 8081)
#   AGENTOS_HUB_PROXY_API_PORT configurable-http-proxy's API port (default 8001)
#   AGENTOS_HUB_PASSWORD       the password every student logs in with (DummyAuthenticator)
#   AGENTOS_HUB_ADMIN_TOKEN    optional: a service token to manage users/servers over the REST API
#   AGENTOS_HUB_PG_ADMIN_DSN   optional: a role that may create roles on the migrated class
#                              database; never passed to the students' servers
#   AGENTOS_HUB_EXCHANGE       the folder labs are handed out from (outbound/) and submitted to
#                              (inbound/); default AGENTOS_HUB_DIR/exchange
#
# SimpleLocalProcessSpawner runs every student's server as the hub's own OS user: fine for a
# test or a trusted lab machine, not isolation between students on the file system. For a
# real course use a spawner with one OS user or container per student (e.g. SystemUserSpawner
# or KubeSpawner) and keep the pre_spawn_hook below: the database isolation holds either way.
import os
import sys
from pathlib import Path

from agentos_kernel.classroom.hub import prepare_student
from agentos_kernel.labs.notebook.exchange import EXCHANGE_ENV, hand_out, make_exchange

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

state = Path(os.environ.get("AGENTOS_HUB_DIR", "/srv/agentos-hub")).resolve()
(state / "homes").mkdir(parents=True, exist_ok=True)
ip = os.environ.get("AGENTOS_HUB_IP", "127.0.0.1")
# Labs go out from exchange/outbound (`agentos lab release SOURCE exchange/outbound/<lab>`) and come
# back to exchange/inbound (`agentos lab submit` in a student's server; `agentos lab collect`).
exchange = make_exchange(Path(os.environ.get("AGENTOS_HUB_EXCHANGE", state / "exchange")).resolve())

c.JupyterHub.bind_url = f"http://{ip}:{os.environ.get('AGENTOS_HUB_PORT', '8000')}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{os.environ.get('AGENTOS_HUB_INTERNAL_PORT', '8081')}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('AGENTOS_HUB_PROXY_API_PORT', '8001')}"
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")

# Log in: any username, one shared password (enough for a test or a workshop).
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = os.environ["AGENTOS_HUB_PASSWORD"]
c.Authenticator.allow_all = True

# Each student's server: this Python's Jupyter server, started in homes/<user>.
c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
c.SimpleLocalProcessSpawner.home_dir_template = str(state / "homes" / "{username}")
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
if os.geteuid() == 0:  # a container run as root: the servers run as root too (Jupyter refuses without this)
    c.Spawner.args = ["--allow-root"]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120

admin_dsn = os.environ.get("AGENTOS_HUB_PG_ADMIN_DSN") or None
if admin_dsn:
    from agentos_kernel.store.postgres.schema import migrate

    migrate(admin_dsn)  # the class database's tables, roles' groups and policies (idempotent)


def agentos_student(spawner):
    """Before a student's server starts: their workspace, their database role and DSN, and the
    teaching notebooks and released labs they do not have yet (in ~/notebooks; their own files
    are never overwritten)."""
    env = prepare_student(spawner.home_dir, spawner.user.name, admin_dsn)
    given = hand_out(exchange, Path(spawner.home_dir) / "notebooks")
    for why in given.refused:  # an instructor's copy put in outbound/: that lab is held back
        spawner.log.warning("agentos: not handed out to %s: %s", spawner.user.name, why)
    spawner.environment = {**spawner.environment, **env, EXCHANGE_ENV: str(exchange)}


c.Spawner.pre_spawn_hook = agentos_student

token = os.environ.get("AGENTOS_HUB_ADMIN_TOKEN")
if token:
    c.JupyterHub.services = [{"name": "agentos-admin", "api_token": token}]
    c.JupyterHub.load_roles = [{
        "name": "agentos-admin",
        "description": "create students and tokens, start and stop their servers",
        "scopes": ["admin:users", "admin:servers", "tokens"],
        "services": ["agentos-admin"],
    }]
