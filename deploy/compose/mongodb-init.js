// Run once by the mongo image on the first start (docker-entrypoint-initdb.d), as the root user: creates
// the service's own user with readWrite on its database only. Its password is the mongodb_wrs_password
// secret, which secrets/mongodb_uri repeats.
const fs = require('fs');
const dbName = process.env.MONGODB_DB || 'wrs';
const password = fs.readFileSync('/run/secrets/mongodb_wrs_password', 'utf8').trim();
db.getSiblingDB('admin').createUser({
  user: 'wrs',
  pwd: password,
  roles: [{ role: 'readWrite', db: dbName }],
});
