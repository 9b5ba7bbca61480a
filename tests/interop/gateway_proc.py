"""Shared by the boto3 interop scripts: the exit-77 skip, the gateway binary named by
REELFS_GATEWAY_BIN, and a reelfs-gateway process on 127.0.0.1:0 with a temp root.

Imported as a plain module (the scripts run as `python3 <path>`, so sys.path[0] is this folder).
Importing it skips the test when REELFS_GATEWAY_BIN is unusable. Not thread-safe: one Gateway is
driven by one thread.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


BIN = os.environ.get("REELFS_GATEWAY_BIN", "")
if not BIN or not os.access(BIN, os.X_OK):
    skip("REELFS_GATEWAY_BIN not set or not executable (build target reelfs-gateway)")


class Gateway:
    """Starts the gateway in a fresh temp dir (work/root is the root, work/gateway.err its stderr).

    config: YAML text written to work/gateway.yaml and passed as --config; port_file: also pass
    --port-file and check it names the port the start-up line announces.
    """

    def __init__(self, prefix, access, secret, config=None, port_file=False, front_end_of=None):
        """front_end_of: another Gateway whose root this one serves with --front-end."""
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.root = front_end_of.root if front_end_of else os.path.join(self.work, "root")
        extra = []
        if config is not None:
            path = os.path.join(self.work, "gateway.yaml")
            with open(path, "w") as f:
                f.write(config)
            extra += ["--config", path]
        port_path = os.path.join(self.work, "port")
        if port_file:
            extra += ["--port-file", port_path]
        self.err = open(os.path.join(self.work, "gateway.err"), "w")
        self.proc = subprocess.Popen(
            [BIN, "--root", self.root, "--front-end" if front_end_of else "--create",
             "--listen", "127.0.0.1:0", *extra, "--access-key", access,
             "--secret-key", secret, "--log-level", os.environ.get("GW_LOG_LEVEL", "warn")],
            stdout=subprocess.PIPE, stderr=self.err, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("reelfs-gateway listening on http://127.0.0.1:"):
            self.proc.kill()
            raise RuntimeError(f"unexpected start-up line {line!r}")
        self.endpoint = line.split(" on ", 1)[1]
        if port_file:
            assert open(port_path).read().strip() == self.endpoint.rsplit(":", 1)[1]

    def terminate(self):
        """SIGTERMs the gateway if still running; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        self.err.close()
        return rc

    def stderr_tail(self, n=4000):
        with open(os.path.join(self.work, "gateway.err")) as f:
            return f.read()[-n:]

    def cleanup(self):
        if os.environ.get("KEEP_WORK") != "1":
            shutil.rmtree(self.work, ignore_errors=True)

    def stop(self):
        """terminate() and cleanup(); a gateway that exits non-zero on SIGTERM fails the test."""
        running = self.proc.poll() is None
        rc = self.terminate()
        assert not running or rc == 0, f"gateway exited {rc} on SIGTERM"
        self.cleanup()


def s3_client(endpoint, access, secret):
    """A boto3 S3 client as the scripts test with: path-style, SigV4, one attempt (a retry would
    hide the answer under test). Imports boto3 here: a script has skipped already without it."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=access, aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                      retries={"max_attempts": 1}))
