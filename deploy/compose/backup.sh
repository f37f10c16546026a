#!/bin/sh
# Backs up the Compose installation into ./backups (docs/deploy.md "Backups"): a MongoDB dump of the replica set
# and both Temporal databases, then records the time of this successful backup in
# backups/metrics/wrs_backup.prom, which the backup-metrics service exposes to Prometheus (WrsBackupTooOld fires
# when it is older than a day). Run it from cron on the host, e.g. `15 3 * * * cd /srv/wrs && deploy/compose/backup.sh`.
set -eu
cd "$(dirname "$0")/../.."
umask 077
mkdir -p backups/metrics
stamp="$(date -u +%Y%m%dT%H%MZ)"
docker compose exec -T mongodb sh -c 'mongodump --quiet --tls --tlsCAFile /run/secrets/tls_ca --host mongodb \
  -u root -p "$(cat /run/secrets/mongodb_root_password)" --authenticationDatabase admin --oplog --gzip --archive' \
  > "backups/mongodb-$stamp.archive.gz"
for db in temporal temporal_visibility; do
  docker compose exec -T postgresql pg_dump -U postgres -Fc "$db" > "backups/$db-$stamp.dump"
done
# Written to a temporary name and renamed, so the exporter never reads half a file; readable by its user.
cat > backups/metrics/wrs_backup.prom.tmp <<METRICS
# HELP wrs_backup_last_success_timestamp_seconds Unix time of the last successful backup (deploy/compose/backup.sh).
# TYPE wrs_backup_last_success_timestamp_seconds gauge
wrs_backup_last_success_timestamp_seconds $(date -u +%s)
METRICS
chmod 0644 backups/metrics/wrs_backup.prom.tmp
chmod 0755 backups/metrics
mv backups/metrics/wrs_backup.prom.tmp backups/metrics/wrs_backup.prom
echo "backed up to backups/*-$stamp.*"
