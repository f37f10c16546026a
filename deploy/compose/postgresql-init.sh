#!/bin/sh
# Runs once, on the first start of an empty PostgreSQL data directory (docker-entrypoint-initdb.d): creates
# Temporal's own role, which may log in and create databases (temporal-schema-setup creates and owns
# `temporal` and `temporal_visibility`) and nothing else: not a superuser, no role administration.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v role="$TEMPORAL_DB_USER" -v password="$TEMPORAL_DB_PASSWORD" <<'SQL'
CREATE ROLE :"role" WITH LOGIN CREATEDB NOSUPERUSER NOCREATEROLE PASSWORD :'password';
SQL
