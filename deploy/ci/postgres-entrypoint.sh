#!/bin/sh
# Entrypoint of the PostgreSQL image deploy/ci.sh makes from Debian's packages when no registry can be
# reached. It honours the part of the official postgres image's contract that compose.yaml uses:
# POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB and PGDATA; a new data directory is initialised, with
# password (scram-sha-256) authentication over TCP, and the server listens on every address.
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /run/postgresql
	chown -R postgres:postgres "$PGDATA" /run/postgresql
	chmod 700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo "postgres-entrypoint: POSTGRES_PASSWORD is required to initialise $PGDATA" >&2
		exit 1
	fi
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	"$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
	rm -f "$pwfile"
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	if [ "$POSTGRES_DB" != postgres ]; then
		echo "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\"" |
			"$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
	fi
	echo "postgres-entrypoint: initialised $PGDATA (database $POSTGRES_DB, user $POSTGRES_USER)"
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
