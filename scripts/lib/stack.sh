# shellcheck shell=bash
# stack.sh -- shell helpers shared by scripts/demo and tests/bench: a private
# PostgreSQL 15 cluster (run as the right user, password required), control of
# daemons by pid, and the engines cairn-agents leave running.
#
# Sourced by bash scripts that use `set -euo pipefail`; set PROG first (it
# prefixes every message). Paths handed to these functions must be absolute.

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

say() { printf '%s: %s\n' "$PROG" "$*"; }
warn() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
    warn "$*"
    exit 1
}

# show_log_tail FILE [LINES] -- copy the end of a log to stderr, framed, so a
# failure message comes with its cause.
show_log_tail() {
    local file=$1 lines=${2:-30}
    [ -s "$file" ] || return 0
    printf -- '--- last %s lines of %s ---\n' "$lines" "$file" >&2
    tail -n "$lines" "$file" >&2
    printf -- '---\n' >&2
}

is_root() { [ "$(id -u)" -eq 0 ]; }

# random_secret -- print 48 random hex digits, for passwords and tokens.
random_secret() {
    od -An -tx1 -N24 /dev/urandom | tr -d ' \n'
}

# url_encode STRING -- print STRING percent-encoded for a URL, '/' kept.
url_encode() {
    local LC_ALL=C s=$1 out="" c i
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        case $c in
        [A-Za-z0-9._~/-]) out+=$c ;;
        *) printf -v c '%%%02X' "'$c" && out+=$c ;;
        esac
    done
    printf '%s\n' "$out"
}

# pg_as_owner CMD [ARGS...] -- run a PostgreSQL server program as the user that
# owns the cluster: ourselves, or "postgres" when we are root (initdb, postgres
# and pg_ctl all refuse to run as root). Runs from / so a cwd the postgres user
# cannot enter does not matter.
pg_as_owner() {
    if is_root; then
        (cd / && runuser -u postgres -- "$@")
    else
        "$@"
    fi
}

# pg_blocking_parent PATH -- print the topmost parent directory of PATH that
# the postgres user cannot search (the usual reason it cannot reach a checkout
# under /root), or nothing.
pg_blocking_parent() {
    local part dir="" parts
    IFS=/ read -ra parts <<<"${1#/}"
    unset 'parts[${#parts[@]}-1]'
    for part in "${parts[@]}"; do
        dir=$dir/$part
        if ! runuser -u postgres -- test -x "$dir"; then
            printf '%s\n' "$dir"
            return 0
        fi
    done
}

# pg_prepare_path PATH dir|file -- create the directory or file PATH for the
# server's use. As root, a file or a new (empty) directory is handed to the
# postgres user, and we check that postgres can write PATH; if it cannot, we
# stop and say what to do.
pg_prepare_path() {
    local path=$1 kind=$2 fresh=no blocked
    if [ "$kind" = dir ]; then
        [ -d "$path" ] && [ -n "$(ls -A "$path" 2>/dev/null)" ] || fresh=yes
        mkdir -p "$path"
        [ "$fresh" = no ] || chmod 700 "$path"
    else
        touch "$path"
    fi
    is_root || return 0
    id -u postgres >/dev/null 2>&1 ||
        die "running as root, but there is no 'postgres' user to run PostgreSQL as (is postgresql-15 installed? see scripts/install-deps)"
    if [ "$kind" = file ] || [ "$fresh" = yes ]; then
        chown postgres:postgres "$path"
    fi
    runuser -u postgres -- test -w "$path" && return 0
    blocked=$(pg_blocking_parent "$path")
    if [ -n "$blocked" ]; then
        die "PostgreSQL refuses to run as root, so it runs as user 'postgres', which cannot reach $path" \
            "because it may not enter $blocked. Either let it (chmod o+x $blocked, and likewise for any" \
            "directory below it that is closed), use a checkout outside $blocked, or run this as a non-root user."
    fi
    die "the postgres user cannot write $path (owner: $(stat -c %U "$path")); fix its ownership (chown -R postgres: $path) or remove it"
}

# pg_passfile_make FILE -- make FILE, a libpq password file (mode 600) holding a
# new random password for user "cairn" on 127.0.0.1, any port, unless it exists.
# It is the only copy of the password: cairnd and psql read it through the
# passfile parameter of pg_url's URL, never from a command line.
pg_passfile_make() {
    local file=$1
    if [ ! -s "$file" ]; then
        (
            umask 077
            printf '127.0.0.1:*:*:cairn:%s\n' "$(random_secret)" >"$file.tmp"
        )
        mv -f "$file.tmp" "$file"
    fi
    chmod 600 "$file"
}

# pg_password FILE -- print the password pg_passfile_make wrote into FILE.
pg_password() {
    cut -d: -f5 "$1"
}

# pg_url PORT DBNAME PASSFILE -- print the libpq URL of database DBNAME on
# 127.0.0.1:PORT as user "cairn", with the password read from PASSFILE.
pg_url() {
    printf 'postgresql://cairn@127.0.0.1:%s/%s?passfile=%s\n' "$1" "$2" "$(url_encode "$3")"
}

# pg_init DATADIR PASSFILE [INITDB_ARGS...] -- initdb a cluster whose superuser
# is "cairn", with the password in PASSFILE (see pg_passfile_make) and
# scram-sha-256 for every connection, unless DATADIR already holds one. The
# server never runs without the password. initdb's output goes to stdout.
pg_init() {
    local dir=$1 passfile=$2 pwfile status=0
    shift 2
    [ -f "$dir/PG_VERSION" ] && return 0
    # initdb reads the password from a file of its own; it runs as the server's
    # user, who can reach the data directory's parent (pg_prepare_path).
    pwfile=$(mktemp "$(dirname "$dir")/.initdb-pw.XXXXXX")
    pg_password "$passfile" >"$pwfile"
    if is_root; then chown postgres: "$pwfile"; fi
    pg_as_owner "$PG_BIN/initdb" -D "$dir" -U cairn -A scram-sha-256 --pwfile="$pwfile" \
        -E UTF8 --locale=C "$@" || status=$?
    rm -f "$pwfile"
    return "$status"
}

# pg_trusts DATADIR -- true when the cluster's pg_hba.conf lets some connection
# in without a password: one made before Cairn's scripts set one (initdb -A
# trust), which pg_require_password brings to password authentication.
pg_trusts() {
    awk '$1 !~ /^#/ { for (i = 4; i <= NF; i++) if ($i == "trust") found = 1 }
         END { exit !found }' "$1/pg_hba.conf"
}

# pg_require_password DATADIR PORT PASSFILE -- give user "cairn" of the cluster
# running on DATADIR and PORT the password in PASSFILE while its trust
# authentication still lets us in, then replace its pg_hba.conf with one that
# asks every connection for a password, and reload. The data is untouched.
pg_require_password() {
    local dir=$1 port=$2 passfile=$3
    # On standard input, not the command line, which any user can read.
    "$PG_BIN/psql" -w -h 127.0.0.1 -p "$port" -U cairn -d postgres -XqAt -v ON_ERROR_STOP=1 \
        <<<"ALTER ROLE cairn PASSWORD '$(pg_password "$passfile")'" >/dev/null
    pg_as_owner tee "$dir/pg_hba.conf" >/dev/null <<'EOF'
# Written by Cairn's scripts/lib/stack.sh: a password for every connection.
# TYPE  DATABASE        USER            ADDRESS                 METHOD
local   all             all                                     scram-sha-256
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
local   replication     all                                     scram-sha-256
host    replication     all             127.0.0.1/32            scram-sha-256
host    replication     all             ::1/128                 scram-sha-256
EOF
    pg_as_owner "$PG_BIN/pg_ctl" reload -D "$dir" -s
}

# pg_is_running DATADIR -- true when a postmaster runs on DATADIR.
pg_is_running() {
    [ -f "$1/PG_VERSION" ] && pg_as_owner "$PG_BIN/pg_ctl" status -D "$1" >/dev/null 2>&1
}

# pg_running_port DATADIR -- print the port of the postmaster running on
# DATADIR (line 4 of postmaster.pid).
pg_running_port() {
    sed -n 4p "$1/postmaster.pid"
}

# pg_start DATADIR PORT LOGFILE [POSTGRES_ARGS] -- start the cluster listening
# on 127.0.0.1:PORT only (no Unix socket, so nothing lands in system paths) and
# wait until it accepts connections. On failure, show the log and exit.
pg_start() {
    local dir=$1 port=$2 log=$3 extra=${4:-}
    pg_prepare_path "$log" file
    if ! pg_as_owner "$PG_BIN/pg_ctl" start -D "$dir" -l "$log" -w -t 60 -s \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='' $extra"; then
        show_log_tail "$log"
        die "PostgreSQL did not start (data directory $dir, port $port)"
    fi
}

# pg_stop DATADIR -- fast shutdown (disconnect clients, checkpoint) if running.
pg_stop() {
    pg_is_running "$1" || return 0
    pg_as_owner "$PG_BIN/pg_ctl" stop -D "$1" -m fast -w -t 60 -s
}

# pg_ensure_db PORT NAME PASSFILE -- create database NAME on the local cluster
# unless it exists, as user "cairn" with the password in PASSFILE.
pg_ensure_db() {
    local port=$1 name=$2 passfile=$3 found
    found=$(PGPASSFILE=$passfile "$PG_BIN/psql" -w -h 127.0.0.1 -p "$port" -U cairn -d postgres \
        -XtAq -v name="$name" <<<"SELECT 1 FROM pg_database WHERE datname = :'name'")
    [ "$found" = 1 ] && return 0
    PGPASSFILE=$passfile "$PG_BIN/createdb" -w -h 127.0.0.1 -p "$port" -U cairn "$name"
}

# free_port -- print a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
    /usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# port_in_use HOST PORT -- true when something accepts connections there.
port_in_use() {
    # shellcheck disable=SC2016 # $1 and $2 belong to the inner shell
    timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# proc_alive PID -- true when process PID exists and has not exited. kill -0
# is not enough: a process that exited stays a zombie until its parent reaps
# it, and the parent of a daemon we detached is init, which may do so late or,
# in some containers, never: `up` would then take a crashed cairnd for a live one.
proc_alive() {
    local stat
    [[ "$1" =~ ^[0-9]+$ ]] || return 1
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    # "PID (COMM) STATE ...": the state follows the last ')', as COMM may hold any.
    stat=${stat##*) }
    [[ "${stat:0:1}" != [ZX] ]]
}

# proc_is NAME PID -- true when PID is alive and is a process called NAME (so a
# stale pid file that names a dead process or someone else's is not trusted).
proc_is() {
    local name=$1 pid=$2
    proc_alive "$pid" || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}

# proc_stop NAME PID TIMEOUT -- SIGTERM, wait up to TIMEOUT seconds for the
# process to exit, then SIGKILL.
proc_stop() {
    local name=$1 pid=$2 timeout=$3 tenths=0
    proc_is "$name" "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    while proc_is "$name" "$pid"; do
        if [ "$tenths" -ge $((timeout * 10)) ]; then
            warn "$name (pid $pid) still running after ${timeout}s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            return 0
        fi
        sleep 0.1
        tenths=$((tenths + 1))
    done
}

# cairnd_start BIN LISTEN LOGFILE PIDFILE [SERVE_ARGS...] -- start BIN serve in
# the background, detached from our session, appending its output to LOGFILE
# and writing its pid to PIDFILE. CAIRN_DATABASE_URL must be set.
cairnd_start() {
    local bin=$1 listen=$2 log=$3 pidfile=$4
    shift 4
    setsid "$bin" serve --listen "$listen" "$@" </dev/null >>"$log" 2>&1 &
    echo "$!" >"$pidfile"
}

# wait_healthy URL NAME PID LOGFILE TIMEOUT -- poll URL until it answers 2xx.
# If process NAME/PID dies or TIMEOUT seconds pass first, show LOGFILE's tail
# and exit.
wait_healthy() {
    local url=$1 name=$2 pid=$3 log=$4 timeout=$5 deadline
    deadline=$((SECONDS + timeout))
    until curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null; do
        if ! proc_alive "$pid"; then
            show_log_tail "$log"
            die "$name exited before answering $url"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            show_log_tail "$log"
            die "$name (pid $pid) did not answer $url within ${timeout}s"
        fi
        sleep 0.1
    done
}

# agent_engine_pids DATA_DIR... -- print the pid of every engine that the
# cairn-agents on these data directories started and that still runs. A
# pidfile DATA_DIR/nodes/<id>/engine.pid is trusted only when its pid's
# command line is a redis or valkey server and its working directory is that
# node's data directory, so a stale pidfile naming another process is never
# acted on.
agent_engine_pids() {
    local dir pidfile pid cwd
    for dir in "$@"; do
        for pidfile in "$dir"/nodes/*/engine.pid; do
            [ -f "$pidfile" ] || continue
            pid=$(cat "$pidfile")
            proc_alive "$pid" || continue
            tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -Eq '(redis|valkey)-server' || continue
            cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
            [ "$cwd" = "$(cd "$(dirname "$pidfile")/data" 2>/dev/null && pwd -P)" ] || continue
            printf '%s\n' "$pid"
        done
    done
}

# agent_engines_stop TIMEOUT DATA_DIR... -- SIGTERM every engine of
# agent_engine_pids (it writes its data out and exits), SIGKILL what is left
# after TIMEOUT seconds. Engines outlive their agent by design: stop the
# agents first, or they start the engines again.
agent_engines_stop() {
    local timeout=$1 pid tenths=0
    local -a pids
    shift
    mapfile -t pids < <(agent_engine_pids "$@")
    if [ "${#pids[@]}" -eq 0 ]; then
        say "no engines running"
        return 0
    fi
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for pid in "${pids[@]}"; do
        while proc_alive "$pid"; do
            if [ "$tenths" -ge $((timeout * 10)) ]; then
                warn "engine (pid $pid) still running after ${timeout}s; sending SIGKILL"
                kill -KILL "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.1
            tenths=$((tenths + 1))
        done
    done
    say "${#pids[@]} engine(s) stopped"
}
