#include "store/sql_replica_store.h"

namespace berth::store {
namespace {

class SqlReplicaStore final : public ReplicaStore {
 public:
  explicit SqlReplicaStore(Pool& pool) : pool_(pool) {}

  Result<void> Renew(const ReplicaLease& lease) override {
    auto c = pool_.Borrow();
    auto n = c->Execute(
        "INSERT INTO replicas (id, host, started_at, lease_until) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (id) DO UPDATE SET host = $2, started_at = $3, lease_until = $4",
        {lease.id, lease.host, lease.started_at, lease.lease_until});
    if (!n) return n.error();
    return {};
  }

  Result<std::vector<ReplicaLease>> List() override {
    auto c = pool_.Borrow();
    auto rows = c->Query("SELECT id, host, started_at, lease_until FROM replicas ORDER BY id");
    if (!rows) return rows.error();
    std::vector<ReplicaLease> leases;
    for (const auto& r : *rows) leases.push_back({r.Text(0), r.Text(1), r.Int(2), r.Int(3)});
    return leases;
  }

 private:
  Pool& pool_;
};

}  // namespace

std::unique_ptr<ReplicaStore> MakeSqlReplicaStore(Pool& pool) {
  return std::make_unique<SqlReplicaStore>(pool);
}

}  // namespace berth::store
