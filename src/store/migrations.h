// The database schema, as numbered migrations applied in order at start-up. Written in the SQL
// that SQLite and PostgreSQL share. A migration, once released, is never edited: add another.
#pragma once

#include "store/sql.h"

namespace berth::store {

// Applies every migration not yet recorded in schema_migrations, each in its own transaction;
// concurrent berthd processes on one PostgreSQL take turns (an advisory lock).
Result<void> Migrate(SqlConnection& connection);

// The highest migration version this build knows.
int64_t LatestSchemaVersion();

}  // namespace berth::store
