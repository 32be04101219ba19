#include "store/sql_deployment_data_store.h"

#include "core/base64.h"
#include "core/time_format.h"
#include "crypto/digest.h"
#include "store/sealing.h"

namespace berth::store {
namespace {

class SqlDeploymentDataStore final : public DeploymentDataStore {
 public:
  SqlDeploymentDataStore(Pool& pool, const crypto::KeyRing* keys) : pool_(pool), keys_(keys) {}

  Result<Bundle> PutBundle(const std::string& org, const std::string& content) override {
    Bundle b{.org_id = org, .sha256 = crypto::Sha256Hex(content), .content = content};
    b.id = "b-" + b.sha256.substr(0, 32);
    b.created_at = UnixMillisNow();
    auto c = pool_.Borrow();
    // The same module uploaded again keeps its bundle from being pruned while unused; only one
    // uploaded more than kBundleRefreshAfter ago is touched, so that deploying an unchanged
    // module writes (and syncs) nothing here.
    auto n = c->Execute(
        "INSERT INTO bundles (org_id, id, sha256, size, content, created_at) VALUES ($1, $2, $3, "
        "$4, $5, $6) ON CONFLICT (org_id, id) DO UPDATE SET created_at = excluded.created_at "
        "WHERE bundles.created_at < $7",
        {org, b.id, b.sha256, static_cast<int64_t>(content.size()), Base64Encode(content),
         b.created_at, b.created_at - kBundleRefreshAfter.count()});
    if (!n) return n.error();
    if (*n == 0) {  // kept as it was: say when it was made
      auto rows =
          c->Query("SELECT created_at FROM bundles WHERE org_id = $1 AND id = $2", {org, b.id});
      if (!rows) return rows.error();
      if (!rows->empty()) b.created_at = rows->front().Int(0);
    }
    return b;
  }

  Result<int64_t> PruneBundles(int64_t before) override {
    auto c = pool_.Borrow();
    return c->Execute(
        "DELETE FROM bundles WHERE created_at < $1 AND NOT EXISTS (SELECT 1 FROM deployments d "
        "WHERE d.org_id = bundles.org_id AND (d.bundle_id = bundles.id OR (d.bundle_id IS NULL "
        "AND d.state NOT IN ('succeeded', 'failed', 'cancelled'))))",
        {before});
  }

  Result<Bundle> GetBundle(const std::string& org, const std::string& id) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT sha256, content, created_at FROM bundles WHERE org_id = $1 AND id = $2", {org, id});
    if (!rows) return rows.error();
    if (rows->empty()) return MakeError(ErrorKind::kNotFound, "no bundle " + id);
    auto content = Base64Decode(rows->front().Text(1));
    if (!content) return content.error();
    return Bundle{org, id, rows->front().Text(0), std::move(*content), rows->front().Int(2)};
  }

  Result<bool> AppendLog(const std::string& org, const std::string& deployment,
                         const std::string& run_id, int64_t seq, const std::string& data) override {
    constexpr int kAttempts = 5;  // two chunks of one deployment race for a position
    for (int attempt = 0;; ++attempt) {
      auto c = pool_.Borrow();
      auto tx = Transaction::Begin(*c);
      if (!tx) return tx.error();
      auto seen =
          c->Query("SELECT 1 FROM deployment_logs WHERE run_id = $1 AND seq = $2", {run_id, seq});
      if (!seen) return seen.error();
      if (!seen->empty()) return false;
      auto last = c->Query(
          "SELECT MAX(position) FROM deployment_logs WHERE org_id = $1 AND deployment_id = $2",
          {org, deployment});
      if (!last) return last.error();
      auto n = c->Execute(
          "INSERT INTO deployment_logs (org_id, deployment_id, position, run_id, seq, data, at) "
          "VALUES ($1, $2, $3, $4, $5, $6, $7)",
          {org, deployment, last->front().Int(0) + 1, run_id, seq, data, UnixMillisNow()});
      if (!n && n.error().kind == ErrorKind::kAlreadyExists && attempt + 1 < kAttempts) continue;
      if (!n) return n.error();
      if (auto committed = tx->Commit(); !committed) return committed.error();
      return true;
    }
  }

  Result<std::vector<LogChunk>> ReadLog(const std::string& org, const std::string& deployment,
                                        int64_t after, int limit) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT position, run_id, seq, data, at FROM deployment_logs WHERE org_id = $1 AND "
        "deployment_id = $2 AND position > $3 ORDER BY position LIMIT $4",
        {org, deployment, after, int64_t{limit}});
    if (!rows) return rows.error();
    std::vector<LogChunk> chunks;
    for (const auto& r : *rows)
      chunks.push_back({r.Int(0), r.Text(1), r.Int(2), r.Text(3), r.Int(4)});
    return chunks;
  }

  Result<DeploymentEvent> AppendEvent(const std::string& org, const std::string& deployment,
                                      const DeploymentEvent& event) override {
    constexpr int kAttempts = 5;  // two events of one deployment race for a position
    for (int attempt = 0;; ++attempt) {
      auto c = pool_.Borrow();
      auto tx = Transaction::Begin(*c);
      if (!tx) return tx.error();
      auto last = c->Query(
          "SELECT position, run_id, type, reason, message, count, first_at FROM "
          "deployment_events WHERE org_id = $1 AND deployment_id = $2 ORDER BY position DESC "
          "LIMIT 1",
          {org, deployment});
      if (!last) return last.error();
      DeploymentEvent stored = event;
      stored.last_at = UnixMillisNow();
      Result<int64_t> n = int64_t{0};
      if (!last->empty() && last->front().Text(1) == event.run_id &&
          last->front().Text(2) == event.type && last->front().Text(3) == event.reason &&
          last->front().Text(4) == event.message) {
        stored.position = last->front().Int(0);
        stored.count = last->front().Int(5) + 1;
        stored.first_at = last->front().Int(6);
        n = c->Execute(
            "UPDATE deployment_events SET count = $1, last_at = $2 WHERE org_id = $3 AND "
            "deployment_id = $4 AND position = $5",
            {stored.count, stored.last_at, org, deployment, stored.position});
      } else {
        stored.position = last->empty() ? 1 : last->front().Int(0) + 1;
        stored.count = 1;
        stored.first_at = stored.last_at;
        n = c->Execute(
            "INSERT INTO deployment_events (org_id, deployment_id, position, run_id, type, "
            "reason, message, count, first_at, last_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
            "$9, $10)",
            {org, deployment, stored.position, event.run_id, event.type, event.reason,
             event.message, stored.count, stored.first_at, stored.last_at});
      }
      if (!n && n.error().kind == ErrorKind::kAlreadyExists && attempt + 1 < kAttempts) continue;
      if (!n) return n.error();
      if (auto committed = tx->Commit(); !committed) return committed.error();
      return stored;
    }
  }

  Result<std::vector<DeploymentEvent>> Events(const std::string& org,
                                              const std::string& deployment) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT position, run_id, type, reason, message, count, first_at, last_at FROM "
        "deployment_events WHERE org_id = $1 AND deployment_id = $2 ORDER BY position",
        {org, deployment});
    if (!rows) return rows.error();
    std::vector<DeploymentEvent> events;
    for (const auto& r : *rows) {
      events.push_back(
          {r.Int(0), r.Text(1), r.Text(2), r.Text(3), r.Text(4), r.Int(5), r.Int(6), r.Int(7)});
    }
    return events;
  }

  Result<void> PutArtifact(const std::string& org, const std::string& deployment,
                           const Artifact& a) override {
    auto c = pool_.Borrow();
    auto n = c->Execute(
        "INSERT INTO deployment_artifacts (org_id, deployment_id, name, run_id, sha256, size, "
        "content, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (org_id, "
        "deployment_id, name) DO UPDATE SET run_id = excluded.run_id, sha256 = excluded.sha256, "
        "size = excluded.size, content = excluded.content, at = excluded.at",
        {org, deployment, a.name, a.run_id, crypto::Sha256Hex(a.content),
         static_cast<int64_t>(a.content.size()),
         SealValue(keys_, Base64Encode(a.content), ArtifactCell(org, deployment, a.name)),
         UnixMillisNow()});
    if (!n) return n.error();
    return {};
  }

  Result<Artifact> GetArtifact(const std::string& org, const std::string& deployment,
                               const std::string& name) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT run_id, sha256, content, at FROM deployment_artifacts WHERE org_id = $1 AND "
        "deployment_id = $2 AND name = $3",
        {org, deployment, name});
    if (!rows) return rows.error();
    if (rows->empty())
      return MakeError(ErrorKind::kNotFound, "deployment " + deployment + " has no " + name);
    auto opened = OpenValue(keys_, rows->front().Text(2), ArtifactCell(org, deployment, name));
    if (!opened) return opened.error();
    auto content = Base64Decode(*opened);
    if (!content) return content.error();
    return Artifact{name, rows->front().Text(0), rows->front().Text(1), std::move(*content),
                    rows->front().Int(3)};
  }

  Result<std::vector<ArtifactOwner>> ArtifactsAwaiting(const std::string& name,
                                                       const std::string& with_prefix,
                                                       const std::string& without_prefix,
                                                       int limit) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT a.org_id, a.deployment_id, a.run_id FROM deployment_artifacts a WHERE a.name = "
        "$1 AND EXISTS (SELECT 1 FROM deployment_artifacts w WHERE w.org_id = a.org_id AND "
        "w.deployment_id = a.deployment_id AND w.name = $2 || a.run_id) AND NOT EXISTS (SELECT "
        "1 FROM deployment_artifacts o WHERE o.org_id = a.org_id AND o.deployment_id = "
        "a.deployment_id AND o.name = $3 || a.run_id) ORDER BY a.at LIMIT $4",
        {name, with_prefix, without_prefix, static_cast<int64_t>(limit)});
    if (!rows) return rows.error();
    std::vector<ArtifactOwner> out;
    for (const auto& row : *rows) out.push_back({row.Text(0), row.Text(1), row.Text(2)});
    return out;
  }

 private:
  Pool& pool_;
  const crypto::KeyRing* keys_;
};

}  // namespace

std::unique_ptr<DeploymentDataStore> MakeSqlDeploymentDataStore(Pool& pool,
                                                                const crypto::KeyRing* keys) {
  return std::make_unique<SqlDeploymentDataStore>(pool, keys);
}

}  // namespace berth::store
