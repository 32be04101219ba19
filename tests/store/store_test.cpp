// One suite, two databases: every behaviour of the Store on SQLite and on a real PostgreSQL.
#include "store/store.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "core/base64.h"
#include "core/mutex.h"
#include "crypto/aes_gcm.h"
#include "crypto/key_ring.h"
#include "postgres_test_server.h"
#include "store/migrations.h"
#include "store/sealing.h"
#include "store/sql.h"
#include "sys/files.h"

namespace berth::store {
namespace {

using nlohmann::json;

enum class Backend { kSqlite, kPostgres };

class StoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kSqlite) {
      auto dir = sys::TempDir::Create("store-test");
      ASSERT_TRUE(dir);
      dir_.emplace(std::move(*dir));
      url_ = "sqlite:" + (dir_->Path() / "berth.db").string();
    } else {
      auto pg = testenv::PostgresTestServer::Shared();
      ASSERT_TRUE(pg) << pg.error().ToString();
      static std::atomic<int> counter{0};
      std::string db = "store_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
      auto admin = OpenPostgres((*pg)->ConnectionString());
      ASSERT_TRUE(admin) << admin.error().ToString();
      ASSERT_TRUE((*admin)->ExecuteScript("CREATE DATABASE " + db));
      url_ = (*pg)->Url(db);
      database_ = db;
    }
    auto store = OpenStore(url_, 4);
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = std::move(*store);
    ASSERT_TRUE(store_->CreateOrganization("acme"));
    ASSERT_TRUE(store_->CreateOrganization("other"));
  }

  Record Project(const std::string& id, const std::string& org = "acme") {
    Record r;
    r.kind = Kind::kProject;
    r.org_id = org;
    r.id = id;
    r.body = {{"display_name", id}};
    return r;
  }
  Record EnvType(const std::string& id) {
    Record r = Project(id);
    r.kind = Kind::kEnvType;
    return r;
  }
  Record Runner(const std::string& id) {
    Record r = Project(id);
    r.kind = Kind::kRunner;
    r.columns = {{"runner_type", "local"}, {"storage_type", "berth"}};
    return r;
  }
  Record Env(const std::string& project, const std::string& id, const std::string& type,
             std::optional<std::string> runner = std::nullopt) {
    Record r = Project(id);
    r.kind = Kind::kEnvironment;
    r.parent_id = project;
    r.columns = {{"env_type_id", type}, {"runner_id", runner}};
    return r;
  }
  Record Rule(const std::string& id, const std::string& runner, const std::string& project,
              const std::string& type) {
    Record r = Project(id);
    r.kind = Kind::kRunnerRule;
    r.columns = {{"runner_id", runner}, {"project_id", project}, {"env_type_id", type}};
    return r;
  }

  std::optional<sys::TempDir> dir_;
  std::string url_;
  std::string database_;  // PostgreSQL's
  std::unique_ptr<Store> store_;
};

// A server that drops every connection (a restart, a failover, pg_terminate_backend): each
// pooled connection is found gone before its next unit of work starts and is made again, so no
// caller sees a dead one. (Found in CI: the first request on each dead connection failed.)
TEST_P(StoreTest, ConnectionsTheServerDroppedAreMadeAgainBeforeTheirNextUse) {
  if (GetParam() == Backend::kSqlite) return;  // a file has no connection to lose
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE(store_->Get(Kind::kProject, "acme", "", "none").error().kind ==
                ErrorKind::kNotFound);
  auto pg = testenv::PostgresTestServer::Shared();
  ASSERT_TRUE(pg);
  auto admin = OpenPostgres((*pg)->ConnectionString());
  ASSERT_TRUE(admin);
  const std::string ours =
      "FROM pg_stat_activity WHERE datname = '" + database_ + "' AND pid <> pg_backend_pid()";
  ASSERT_TRUE((*admin)->Query("SELECT pg_terminate_backend(pid) " + ours, {}));
  for (int i = 0; i < 100; ++i) {  // the backends end a moment after they are told to
    auto left = (*admin)->Query("SELECT count(*) " + ours, {});
    ASSERT_TRUE(left);
    if (std::get<int64_t>((*left)[0].values[0]) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int i = 0; i < 8; ++i) {
    auto made = store_->Create(Project("after-" + std::to_string(i)));
    EXPECT_TRUE(made) << i << ": " << made.error().ToString();
  }
}

TEST_P(StoreTest, MigrationsApplyOnceAndReopeningChangesNothing) {
  ASSERT_TRUE(store_->Create(Project("kept")));
  store_.reset();
  auto again = OpenStore(url_, 2);
  ASSERT_TRUE(again) << again.error().ToString();
  auto kept = (*again)->Get(Kind::kProject, "acme", "", "kept");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->body["display_name"], "kept");
}

TEST_P(StoreTest, ADatabaseFromANewerBerthIsRefused) {
  store_.reset();
  auto c = GetParam() == Backend::kSqlite ? OpenSqlite(url_.substr(7)) : OpenPostgres(url_);
  ASSERT_TRUE(c);
  ASSERT_TRUE((*c)->Execute("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)",
                            {LatestSchemaVersion() + 1}));
  auto refused = OpenStore(url_, 1);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("upgrade berth"), std::string::npos);
}

// What is acknowledged is on disk: SQLite syncs its write-ahead log at every commit (FULL, 2);
// PostgreSQL answers a commit once it is flushed, even where the server's default says not to.
TEST_P(StoreTest, ACommitIsOnDiskBeforeItIsAcknowledged) {
  if (GetParam() == Backend::kPostgres) {
    auto c = OpenPostgres(url_);
    ASSERT_TRUE(c);
    auto database = (*c)->Query("SELECT current_database()");
    ASSERT_TRUE(database);
    const std::string name = database->front().Text(0);
    ASSERT_TRUE((*c)->Execute("ALTER DATABASE " + name + " SET synchronous_commit = off"));
    auto fresh = OpenPostgres(url_);  // a session that starts with that default
    ASSERT_TRUE((*c)->Execute("ALTER DATABASE " + name + " RESET synchronous_commit"));
    ASSERT_TRUE(fresh);
    auto mode = (*fresh)->Query("SHOW synchronous_commit");
    ASSERT_TRUE(mode);
    EXPECT_EQ(mode->front().Text(0), "on");
    return;
  }
  auto c = OpenSqlite(url_.substr(7));
  ASSERT_TRUE(c);
  auto mode = (*c)->Query("PRAGMA synchronous");
  ASSERT_TRUE(mode);
  ASSERT_EQ(mode->size(), 1U);
  EXPECT_EQ(mode->front().Int(0), 2) << "synchronous=FULL";
  auto journal = (*c)->Query("PRAGMA journal_mode");
  ASSERT_TRUE(journal);
  EXPECT_EQ(journal->front().Text(0), "wal");
}

TEST_P(StoreTest, OrganizationsAndTokens) {
  EXPECT_FALSE(*store_->CreateOrganization("acme"));  // already there
  EXPECT_TRUE(*store_->OrganizationExists("acme"));
  EXPECT_FALSE(*store_->OrganizationExists("nobody"));
  ASSERT_TRUE(store_->CreateToken({"admin", "acme", "first admin", 0}, "hash-1"));
  auto found = store_->FindToken("hash-1");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->org_id, "acme");
  EXPECT_EQ(found->id, "admin");
  EXPECT_EQ(store_->FindToken("hash-2").error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(store_->CreateToken({"again", "acme", "", 0}, "hash-1").error().kind,
            ErrorKind::kAlreadyExists);
}

TEST_P(StoreTest, TokensKeepTheirScopesExpiryAndMakerAndAreRevoked) {
  ApiToken ci{.id = "ci",
              .org_id = "acme",
              .description = "pipeline",
              .scopes = Scopes::Of({Scope::kDeploy, Scope::kRead}),
              .expires_at = 1234,
              .created_by = "admin"};
  ASSERT_TRUE(store_->CreateToken(ci, "hash-ci"));
  auto found = store_->FindToken("hash-ci");
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(found->scopes, ci.scopes);
  EXPECT_EQ(found->expires_at, 1234);
  EXPECT_EQ(found->created_by, "admin");
  // A new secret for the same id: the old one opens nothing.
  ci.scopes = Scopes::Of({Scope::kRead});
  ASSERT_TRUE(store_->PutToken(ci, "hash-ci-2"));
  EXPECT_EQ(store_->FindToken("hash-ci").error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(store_->FindToken("hash-ci-2")->scopes, ci.scopes);
  auto listed = store_->ListTokens("acme");
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().id, "ci");
  ASSERT_TRUE(store_->DeleteToken("acme", "ci"));
  EXPECT_EQ(store_->FindToken("hash-ci-2").error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(store_->DeleteToken("acme", "ci").error().kind, ErrorKind::kNotFound);
}

// The first token comes with its organization or not at all.
TEST_P(StoreTest, AnOrganizationAndItsFirstTokenAreMadeTogether) {
  ApiToken first{.id = "tok-admin", .org_id = "beta"};
  ASSERT_TRUE(*store_->CreateOrganizationWithToken(first, "hash-beta"));
  EXPECT_TRUE(*store_->OrganizationExists("beta"));
  EXPECT_EQ(store_->FindToken("hash-beta")->org_id, "beta");
  // Made already: nothing is written, the second secret opens nothing.
  EXPECT_FALSE(*store_->CreateOrganizationWithToken(first, "hash-beta-2"));
  EXPECT_EQ(store_->FindToken("hash-beta-2").error().kind, ErrorKind::kNotFound);
}

TEST_P(StoreTest, RecordsAreCreatedReadUpdatedAndDeleted) {
  auto created = store_->Create(Project("web"));
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_EQ(created->version, 1);
  EXPECT_GT(created->created_at, 0);
  EXPECT_EQ(store_->Create(Project("web")).error().kind, ErrorKind::kAlreadyExists);

  Record changed = *created;
  changed.body["display_name"] = "Web";
  auto updated = store_->Update(changed, 1);
  ASSERT_TRUE(updated) << updated.error().ToString();
  EXPECT_EQ(updated->version, 2);
  EXPECT_EQ(store_->Get(Kind::kProject, "acme", "", "web")->body["display_name"], "Web");

  auto stale = store_->Update(changed, 1);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().kind, ErrorKind::kConflict);
  EXPECT_EQ(store_->Delete(Kind::kProject, "acme", "", "web", 1).error().kind,
            ErrorKind::kConflict);
  ASSERT_TRUE(store_->Delete(Kind::kProject, "acme", "", "web", 2));
  EXPECT_EQ(store_->Get(Kind::kProject, "acme", "", "web").error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(store_->Delete(Kind::kProject, "acme", "", "web", -1).error().kind,
            ErrorKind::kNotFound);
  EXPECT_EQ(store_->Update(changed, -1).error().kind, ErrorKind::kNotFound);
}

TEST_P(StoreTest, OrganizationsDoNotSeeEachOther) {
  ASSERT_TRUE(store_->Create(Project("web")));
  ASSERT_TRUE(store_->Create(Project("web", "other")));  // the same id, another organization
  EXPECT_EQ(store_->List(Kind::kProject, "other", "", {})->items.size(), 1u);
  ASSERT_TRUE(store_->Delete(Kind::kProject, "other", "", "web", -1));
  EXPECT_TRUE(store_->Get(Kind::kProject, "acme", "", "web"));
}

TEST_P(StoreTest, ListsArePagedInIdOrder) {
  for (int i = 0; i < 25; ++i) {
    char id[8];
    std::snprintf(id, sizeof id, "p%02d", i);
    ASSERT_TRUE(store_->Create(Project(id)));
  }
  std::vector<std::string> seen;
  std::string after;
  int pages = 0;
  do {
    auto page = store_->List(Kind::kProject, "acme", "", {.after = after, .limit = 10});
    ASSERT_TRUE(page);
    for (const auto& r : page->items) seen.push_back(r.id);
    after = page->next;
    ++pages;
  } while (!after.empty());
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_EQ(seen.front(), "p00");
  EXPECT_EQ(seen.back(), "p24");
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

// Past one page of ListAll's (a thousand), in id order, another organization's left out.
TEST_P(StoreTest, ListAllReadsEveryPage) {
  for (int i = 0; i < 1003; ++i) {
    char id[8];
    std::snprintf(id, sizeof id, "p%04d", i);
    ASSERT_TRUE(store_->Create(Project(id)));
  }
  ASSERT_TRUE(store_->Create(Project("p9999", "other")));
  auto all = ListAll(*store_, Kind::kProject, "acme", "");
  ASSERT_TRUE(all) << all.error().ToString();
  ASSERT_EQ(all->size(), 1003u);
  EXPECT_EQ(all->front().id, "p0000");
  EXPECT_EQ(all->back().id, "p1002");
}

TEST_P(StoreTest, AnEnvironmentNeedsItsProjectAndTypeAndPinsItsRunner) {
  EXPECT_EQ(store_->Create(Env("web", "dev", "development")).error().kind,
            ErrorKind::kFailedPrecondition);
  ASSERT_TRUE(store_->Create(Project("web")));
  ASSERT_TRUE(store_->Create(EnvType("development")));
  ASSERT_TRUE(store_->Create(Runner("local-1")));
  ASSERT_TRUE(store_->Create(Env("web", "dev", "development", "local-1")));
  ASSERT_TRUE(store_->Create(Env("web", "qa", "development")));
  EXPECT_EQ(store_->Create(Env("web", "x", "development", "no-such-runner")).error().kind,
            ErrorKind::kFailedPrecondition);

  auto users = store_->EnvironmentsUsingRunner("acme", "local-1");
  ASSERT_TRUE(users);
  EXPECT_EQ(*users, std::vector<std::string>{"web/dev"});
  EXPECT_EQ(store_->Delete(Kind::kRunner, "acme", "", "local-1", -1).error().kind,
            ErrorKind::kFailedPrecondition);
  EXPECT_EQ(store_->Delete(Kind::kProject, "acme", "", "web", -1).error().kind,
            ErrorKind::kFailedPrecondition);

  auto env = store_->Get(Kind::kEnvironment, "acme", "web", "dev");
  ASSERT_TRUE(env);
  EXPECT_EQ(env->columns["runner_id"], "local-1");
  auto qa = store_->Get(Kind::kEnvironment, "acme", "web", "qa");
  EXPECT_FALSE(qa->columns["runner_id"].has_value());
  env->columns["runner_id"] = std::nullopt;
  ASSERT_TRUE(store_->Update(*env, env->version));
  EXPECT_TRUE(store_->Delete(Kind::kRunner, "acme", "", "local-1", -1));
}

TEST_P(StoreTest, TwoRulesCannotShareASelectorEvenWhenCreatedAtOnce) {
  ASSERT_TRUE(store_->Create(Runner("r1")));
  std::atomic<int> won{0}, conflicts{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto created = store_->Create(Rule("rule-" + std::to_string(i), "r1", "web", ""));
      if (created) {
        ++won;
      } else if (created.error().kind == ErrorKind::kAlreadyExists) {
        ++conflicts;
        EXPECT_NE(created.error().message.find("same project and environment type"),
                  std::string::npos)
            << created.error().message;
      } else {
        ADD_FAILURE() << created.error().ToString();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(won, 1);
  EXPECT_EQ(conflicts, 7);
  // Another selector is fine; the filter finds a runner's rules; deleting the runner takes them.
  ASSERT_TRUE(store_->Create(Rule("any", "r1", "", "")));
  auto mine = store_->List(Kind::kRunnerRule, "acme", "", {.where = {{"runner_id", "r1"}}});
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->items.size(), 2u);
  EXPECT_EQ(store_->List(Kind::kRunnerRule, "acme", "", {.where = {{"body", "x"}}}).error().kind,
            ErrorKind::kInvalidArgument);
  ASSERT_TRUE(store_->Delete(Kind::kRunner, "acme", "", "r1", -1));
  EXPECT_TRUE(store_->List(Kind::kRunnerRule, "acme", "", {})->items.empty());
}

TEST_P(StoreTest, OfTwoConcurrentUpdatesFromOneVersionExactlyOneWins) {
  auto created = store_->Create(Project("web"));
  ASSERT_TRUE(created);
  std::atomic<int> won{0}, conflicts{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      Record r = *created;
      r.body["display_name"] = "writer " + std::to_string(i);
      auto updated = store_->Update(r, created->version);
      if (updated)
        ++won;
      else if (updated.error().kind == ErrorKind::kConflict)
        ++conflicts;
      else
        ADD_FAILURE() << updated.error().ToString();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(won, 1);
  EXPECT_EQ(conflicts, 5);
}

TEST_P(StoreTest, TwoServersOnOneDatabaseShareOneTruth) {
  // As two berthd processes would: separate stores, separate connection pools.
  auto second = OpenStore(url_, 4);
  ASSERT_TRUE(second) << second.error().ToString();
  ASSERT_TRUE(store_->Create(Runner("shared")));
  EXPECT_TRUE((*second)->Get(Kind::kRunner, "acme", "", "shared"));
  std::atomic<int> won{0};
  std::vector<std::thread> threads;
  threads.reserve(6);
  for (int i = 0; i < 6; ++i) {
    Store* store = i % 2 == 0 ? store_.get() : second->get();
    threads.emplace_back([&, store, i] {
      if (store->Create(Rule("r" + std::to_string(i), "shared", "", "prod"))) ++won;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(won, 1);
  auto read = (*second)->Get(Kind::kRunner, "acme", "", "shared");
  ASSERT_TRUE(read);
  ASSERT_TRUE(store_->Update(*read, read->version));
  EXPECT_EQ((*second)->Update(*read, read->version).error().kind, ErrorKind::kConflict);
}

TEST_P(StoreTest, OfServersStartingAtOnceTheFirstSharedSecretWinsForAll) {
  auto second = OpenStore(url_, 2);
  ASSERT_TRUE(second);
  std::vector<std::string> seen(6);
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    Store* store = i % 2 == 0 ? store_.get() : second->get();
    threads.emplace_back([&, store, i] {
      seen[static_cast<size_t>(i)] =
          store->EnsureSharedSecret("run-token-seed", "candidate-" + std::to_string(i)).value();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& value : seen) EXPECT_EQ(value, seen[0]);
  EXPECT_TRUE(seen[0].starts_with("candidate-"));
  EXPECT_EQ(*store_->EnsureSharedSecret("run-token-seed", "later"), seen[0]);
}

TEST_P(StoreTest, StatesKeepEveryVersionAndADeletionIsOneToo) {
  StateStore& states = store_->States();
  EXPECT_EQ(states.Current("acme/web/dev").error().kind, ErrorKind::kNotFound);
  auto first = states.Put("acme/web/dev", R"({"serial":1})", "", "run-1");
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(first->version, 1);
  ASSERT_TRUE(states.Put("acme/web/dev", R"({"serial":2})", "", "run-2"));
  // The same write again (its answer lost on the way) is the version it made; the same content
  // from another run is a version of its own.
  auto retried = states.Put("acme/web/dev", R"({"serial":2})", "", "run-2");
  ASSERT_TRUE(retried) << retried.error().ToString();
  EXPECT_EQ(retried->version, 2);
  EXPECT_EQ(retried->run_id, "run-2");
  EXPECT_EQ(states.Put("acme/web/dev", R"({"serial":2})", "", "run-2b")->version, 3);
  EXPECT_EQ(*states.Current("acme/web/dev"), R"({"serial":2})");
  EXPECT_EQ(states.Current("acme/web/prod").error().kind, ErrorKind::kNotFound);  // its own
  auto deleted = states.Delete("acme/web/dev", "", "run-3");
  ASSERT_TRUE(deleted);
  EXPECT_TRUE(deleted->deleted);
  EXPECT_EQ(states.Current("acme/web/dev").error().kind, ErrorKind::kNotFound);
  auto versions = states.Versions("acme/web/dev");
  ASSERT_TRUE(versions);
  ASSERT_EQ(versions->size(), 4u);
  EXPECT_EQ((*versions)[0].run_id, "run-1");
  EXPECT_EQ((*versions)[1].size, 12);
  EXPECT_EQ((*versions)[1].sha256.size(), 64u);
  EXPECT_EQ(*states.Version("acme/web/dev", 1), R"({"serial":1})");
  EXPECT_EQ(states.Version("acme/web/dev", 4).error().kind, ErrorKind::kNotFound);
}

TEST_P(StoreTest, LocksKnowTheirRunAndAStatesHistoryIsKeptNewestFirst) {
  StateStore& states = store_->States();
  ASSERT_TRUE(states.Lock("acme/web/dev", {"lock-a", R"({"Who":"x"})", 0, "run-7"}));
  ASSERT_TRUE(states.Lock("acme/web/prod", {"lock-b", R"({"Who":"y"})", 0, "run-8"}));
  EXPECT_EQ(states.Holder("acme/web/dev")->run_id, "run-7");
  EXPECT_TRUE(states.ReleaseLocksOf("")->empty()) << "nobody's is not all";
  auto released = states.ReleaseLocksOf("run-7");
  ASSERT_TRUE(released);
  ASSERT_EQ(released->size(), 1u);
  EXPECT_EQ(released->front().key, "acme/web/dev");
  EXPECT_EQ(released->front().id, "lock-a");
  EXPECT_EQ(states.Holder("acme/web/dev").error().kind, ErrorKind::kNotFound);
  EXPECT_TRUE(states.Holder("acme/web/prod"));  // another run's

  ASSERT_TRUE(states.Record("acme/web/dev", {"unlock", "token t1", "lock-a: stuck"}));
  ASSERT_TRUE(states.Record("acme/web/dev", {"rollback", "token t2", "to version 1"}));
  ASSERT_TRUE(states.Record("acme/web/prod", {"unlock", "token t1", "other"}));
  auto history = states.History("acme/web/dev", 10);
  ASSERT_TRUE(history) << history.error().ToString();
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].action, "rollback");
  EXPECT_EQ((*history)[1].detail, "lock-a: stuck");
  EXPECT_GT((*history)[1].at, 0);
  EXPECT_EQ(states.History("acme/web/dev", 1)->size(), 1u);
}

TEST_P(StoreTest, ALockedStateTakesWritesOnlyFromItsHolder) {
  StateStore& states = store_->States();
  ASSERT_TRUE(states.Lock("acme/web/dev", {"lock-a", R"({"Who":"run-1"})", 0}));
  auto second = states.Lock("acme/web/dev", {"lock-b", R"({"Who":"run-2"})", 0});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind, ErrorKind::kConflict);
  EXPECT_EQ(second.error().context, R"({"Who":"run-1"})");  // who holds it
  // tofu asking again for the lock it holds (its answer was lost) gets it; another run with the
  // same lock ID does not.
  ASSERT_TRUE(states.Lock("acme/web/prod", {"lock-p", "{}", 0, "run-1"}));
  EXPECT_TRUE(states.Lock("acme/web/prod", {"lock-p", "{}", 0, "run-1"}));
  EXPECT_EQ(states.Lock("acme/web/prod", {"lock-p", "{}", 0, "run-2"}).error().kind,
            ErrorKind::kConflict);
  EXPECT_EQ(states.Put("acme/web/dev", "{}", "lock-b", "run-2").error().kind, ErrorKind::kConflict);
  EXPECT_EQ(states.Put("acme/web/dev", "{}", "", "run-2").error().kind, ErrorKind::kConflict);
  EXPECT_TRUE(states.Put("acme/web/dev", "{}", "lock-a", "run-1"));
  EXPECT_EQ(states.Unlock("acme/web/dev", "lock-b").error().kind, ErrorKind::kConflict);
  EXPECT_EQ(states.Holder("acme/web/dev")->id, "lock-a");
  ASSERT_TRUE(states.Unlock("acme/web/dev", "lock-a"));
  EXPECT_EQ(states.Holder("acme/web/dev").error().kind, ErrorKind::kNotFound);
  ASSERT_TRUE(states.Lock("acme/web/dev", {"lock-c", "{}", 0}));
  EXPECT_TRUE(states.Unlock("acme/web/dev", ""));  // forced
  // A write that comes late under the broken lock is refused, even with nobody holding it now.
  auto late = states.Put("acme/web/dev", R"({"late":true})", "lock-c", "run-3");
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().kind, ErrorKind::kFailedPrecondition);
  EXPECT_NE(late.error().message.find("no longer held"), std::string::npos);
  EXPECT_EQ(states.Delete("acme/web/dev", "lock-c", "run-3").error().kind,
            ErrorKind::kFailedPrecondition);
  EXPECT_EQ(*states.Current("acme/web/dev"), "{}") << "the late write did not land";
  EXPECT_TRUE(states.Put("acme/web/dev", "{}", "", "run-4")) << "an unlocked write is taken";
}

TEST_P(StoreTest, OfConcurrentLockersExactlyOneHoldsTheLock) {
  std::atomic<int> won{0};
  std::vector<std::thread> threads;
  threads.reserve(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      if (store_->States().Lock("acme/web/dev", {"l" + std::to_string(i), "{}", 0})) ++won;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(won, 1);
}

class DeploymentStoreTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(store_->Create(Project("web")));
    ASSERT_TRUE(store_->Create(EnvType("development")));
    for (const char* env : {"dev", "prod"})
      ASSERT_TRUE(store_->Create(Env("web", env, "development")));
  }

  Result<Deployment> Queue(const std::string& env, const std::string& id) {
    Deployment d;
    d.org_id = "acme";
    d.project_id = "web";
    d.env_id = env;
    d.id = id;
    d.spec = {.op = DeploymentOp::kApply, .source_path = "/m"};
    return store_->Deployments().Create(d);
  }

  std::vector<std::string> StartableIds() {
    auto startable = store_->Deployments().Startable(10);
    EXPECT_TRUE(startable);
    // Across environments the order is by creation time, which may tie within a millisecond.
    std::vector<std::string> ids;
    for (const auto& d : *startable) ids.push_back(d.id);
    std::sort(ids.begin(), ids.end());
    return ids;
  }
};

TEST_P(DeploymentStoreTest, OnePerEnvironmentRunsAndTheOthersWaitInOrder) {
  using S = DeploymentState;
  auto& deployments = store_->Deployments();
  ASSERT_TRUE(Queue("dev", "d1"));
  ASSERT_TRUE(Queue("dev", "d2"));
  ASSERT_TRUE(Queue("dev", "d3"));
  ASSERT_TRUE(Queue("prod", "p1"));
  EXPECT_EQ(deployments.Get("acme", "d3")->sequence, 3);
  EXPECT_EQ(StartableIds(), (std::vector<std::string>{"d1", "p1"}));

  ASSERT_TRUE(deployments.Transition("acme", "d1", S::kQueued, S::kDispatched, "runner local",
                                     {.run_id = "run-d1"}));
  EXPECT_EQ(StartableIds(), (std::vector<std::string>{"p1"}));
  auto holding = deployments.Holding();
  ASSERT_TRUE(holding);
  ASSERT_EQ(holding->size(), 1u);
  EXPECT_EQ(holding->front().id, "d1");
  // The environment is held: the next one cannot be started past it.
  auto second = deployments.Transition("acme", "d2", S::kQueued, S::kDispatched, "");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind, ErrorKind::kConflict);
  ASSERT_TRUE(deployments.Transition("acme", "d2", S::kQueued, S::kCancelled, "by alice"));

  ASSERT_TRUE(deployments.Transition("acme", "d1", S::kDispatched, S::kRunning, ""));
  auto done = deployments.Transition(
      "acme", "d1", S::kRunning, S::kSucceeded, "",
      {.result = DeploymentResult{
           .end = RunEnd{.succeeded = true, .exit_code = 0, .image_id = "runner@sha256:ab"}}});
  ASSERT_TRUE(done);
  EXPECT_EQ(StartableIds(), (std::vector<std::string>{"d3", "p1"}));

  auto d1 = deployments.Get("acme", "d1");
  ASSERT_TRUE(d1);
  EXPECT_EQ(d1->run_id, "run-d1");
  ASSERT_TRUE(d1->result.end);
  EXPECT_EQ(d1->result.end->image_id, "runner@sha256:ab");
  std::vector<std::string> states;
  for (const auto& t : d1->transitions) states.push_back(t["state"]);
  EXPECT_EQ(states, (std::vector<std::string>{"queued", "dispatched", "running", "succeeded"}));
  EXPECT_EQ(d1->transitions[1]["reason"], "runner local");
  EXPECT_EQ(d1->transitions[3]["at"].get<std::string>().size(), 24u);  // RFC 3339, ms

  auto list = deployments.ListForEnvironment("acme", "web", "dev", 10);
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ(list->front().id, "d3");  // newest first
}

TEST_P(DeploymentStoreTest, RefusesWhatTheStateMachineForbidsAndStaleStates) {
  using S = DeploymentState;
  auto& deployments = store_->Deployments();
  ASSERT_TRUE(Queue("dev", "d1"));
  auto skip = deployments.Transition("acme", "d1", S::kQueued, S::kSucceeded, "");
  ASSERT_FALSE(skip);
  EXPECT_EQ(skip.error().kind, ErrorKind::kFailedPrecondition);
  auto stale = deployments.Transition("acme", "d1", S::kRunning, S::kSucceeded, "");
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().kind, ErrorKind::kConflict);
  EXPECT_EQ(deployments.Get("acme", "d1")->state, S::kQueued);
  EXPECT_EQ(Queue("staging", "x").error().kind, ErrorKind::kFailedPrecondition);
  EXPECT_EQ(Queue("dev", "d1").error().kind, ErrorKind::kAlreadyExists);
}

// A run belongs to the replica that claimed it: another records nothing about it, and takes
// it over only once the owner's lease has ended; a cancel another replica receives waits in
// the deployment for the owner.
TEST_P(DeploymentStoreTest, ARunIsItsReplicasUntilThatReplicasLeaseEnds) {
  using S = DeploymentState;
  auto& deployments = store_->Deployments();
  ASSERT_TRUE(
      store_->Replicas().Renew({.id = "a", .host = "h1", .started_at = 1, .lease_until = 5000}));
  ASSERT_TRUE(
      store_->Replicas().Renew({.id = "b", .host = "h2", .started_at = 1, .lease_until = 9000}));
  ASSERT_TRUE(Queue("dev", "d1"));
  ASSERT_TRUE(deployments.Transition("acme", "d1", S::kQueued, S::kDispatched, "",
                                     {.run_id = "d1", .owner = "a"}));
  EXPECT_EQ(deployments.Get("acme", "d1")->owner, "a");
  auto not_mine = deployments.Transition("acme", "d1", S::kDispatched, S::kRunning, "",
                                         {.expected_owner = "b"});
  ASSERT_FALSE(not_mine);
  EXPECT_EQ(not_mine.error().kind, ErrorKind::kConflict);

  EXPECT_FALSE(*deployments.TakeOver("acme", "d1", "a", "b", 4999)) << "a's lease still runs";
  EXPECT_FALSE(*deployments.TakeOver("acme", "d1", "c", "b", 6000)) << "c does not own it";
  ASSERT_TRUE(deployments.RequestCancel("acme", "d1", "token tok-1"));
  EXPECT_EQ(deployments.Get("acme", "d1")->cancel_requested_by, "token tok-1");
  EXPECT_TRUE(*deployments.TakeOver("acme", "d1", "a", "b", 5000));
  EXPECT_FALSE(*deployments.TakeOver("acme", "d1", "a", "c", 5000)) << "b took it first";
  // a renews its lease too late: the run stays b's.
  ASSERT_TRUE(
      store_->Replicas().Renew({.id = "a", .host = "h1", .started_at = 1, .lease_until = 20000}));
  EXPECT_FALSE(deployments.Transition("acme", "d1", S::kDispatched, S::kRunning, "",
                                      {.expected_owner = "a"}));
  auto ended = deployments.Transition("acme", "d1", S::kDispatched, S::kCancelled, "",
                                      {.expected_owner = "b"});
  ASSERT_TRUE(ended) << ended.error().ToString();
  EXPECT_EQ(ended->owner, "b");
  EXPECT_EQ(deployments.Get("acme", "d1")->cancel_requested_by, "");
  EXPECT_FALSE(*deployments.RequestCancel("acme", "d1", "token tok-1")) << "it has ended";
  auto replicas = store_->Replicas().List();
  ASSERT_TRUE(replicas);
  ASSERT_EQ(replicas->size(), 2u);
  EXPECT_EQ((*replicas)[0].lease_until, 20000);
  EXPECT_EQ((*replicas)[1].host, "h2");
}

TEST_P(DeploymentStoreTest, OfConcurrentDispatchersExactlyOneStartsADeployment) {
  ASSERT_TRUE(Queue("dev", "d1"));
  ASSERT_TRUE(Queue("dev", "d2"));
  // As several berthd processes would: each tries to start whatever it sees first.
  auto second = OpenStore(url_, 4);
  ASSERT_TRUE(second);
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  threads.reserve(6);
  for (int i = 0; i < 6; ++i) {
    Store* store = i % 2 == 0 ? store_.get() : second->get();
    threads.emplace_back([&, store, i] {
      const char* id = i % 3 == 0 ? "d2" : "d1";
      if (store->Deployments().Transition("acme", id, DeploymentState::kQueued,
                                          DeploymentState::kDispatched, ""))
        ++started;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(started, 1);
}

TEST_P(DeploymentStoreTest, ConcurrentCreatesInOneEnvironmentGetDistinctPlaces) {
  std::vector<std::thread> threads;
  threads.reserve(5);
  std::atomic<int> created{0};
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&, i] {
      if (Queue("dev", "c" + std::to_string(i))) ++created;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created, 5);
  std::set<int64_t> places;
  for (const auto& d : *store_->Deployments().ListForEnvironment("acme", "web", "dev", 10))
    places.insert(d.sequence);
  EXPECT_EQ(places, (std::set<int64_t>{1, 2, 3, 4, 5}));
}

TEST_P(DeploymentStoreTest, ALogKeepsEachChunkOnceInArrivalOrderAcrossRuns) {
  ASSERT_TRUE(Queue("dev", "d1"));
  ASSERT_TRUE(store_->Deployments().Transition("acme", "d1", DeploymentState::kQueued,
                                               DeploymentState::kDispatched, "", {.run_id = "r1"}));
  auto& data = store_->DeploymentData();
  EXPECT_TRUE(*data.AppendLog("acme", "d1", "r1", 1, "init\n"));
  EXPECT_TRUE(*data.AppendLog("acme", "d1", "r1", 2, "plan\n"));
  EXPECT_FALSE(*data.AppendLog("acme", "d1", "r1", 2, "plan\n"));  // a retry
  EXPECT_TRUE(*data.AppendLog("acme", "d1", "r2", 1, "apply\n"));  // the next run starts at 1
  auto all = data.ReadLog("acme", "d1", 0, 10);
  ASSERT_TRUE(all);
  std::string text;
  for (const auto& c : *all) text += c.data;
  EXPECT_EQ(text, "init\nplan\napply\n");
  auto rest = data.ReadLog("acme", "d1", all->at(1).position, 10);
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ(rest->front().run_id, "r2");
  EXPECT_TRUE(data.ReadLog("other", "d1", 0, 10)->empty());
  EXPECT_EQ(store_->Deployments().GetByRun("r1")->id, "d1");
  EXPECT_EQ(store_->Deployments().GetByRun("r9").error().kind, ErrorKind::kNotFound);
  auto owner = store_->Deployments().OwnerOfRun("r1");
  ASSERT_TRUE(owner) << owner.error().ToString();
  EXPECT_EQ(owner->org_id, "acme");
  EXPECT_EQ(owner->deployment_id, "d1");
  EXPECT_EQ(owner->state, DeploymentState::kDispatched);
  EXPECT_EQ(store_->Deployments().OwnerOfRun("r9").error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(store_->Deployments().OwnerOfRun("").error().kind, ErrorKind::kNotFound);
}

TEST_P(DeploymentStoreTest, ArtifactsAndBundlesKeepBinaryContentExactly) {
  ASSERT_TRUE(Queue("dev", "d1"));
  auto& data = store_->DeploymentData();
  std::string binary("PK\x03\x04\x00\xff\xfe", 7);
  ASSERT_TRUE(data.PutArtifact("acme", "d1", {.name = "plan", .run_id = "r1", .content = binary}));
  ASSERT_TRUE(data.PutArtifact("acme", "d1", {.name = "plan", .run_id = "r1", .content = binary}));
  auto plan = data.GetArtifact("acme", "d1", "plan");
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->content, binary);
  EXPECT_EQ(plan->sha256.size(), 64u);
  EXPECT_EQ(data.GetArtifact("acme", "d1", "outputs").error().kind, ErrorKind::kNotFound);

  auto first = data.PutBundle("acme", binary);
  auto again = data.PutBundle("acme", binary);
  ASSERT_TRUE(first && again);
  EXPECT_EQ(first->id, again->id);
  EXPECT_EQ(data.GetBundle("acme", first->id)->content, binary);
  EXPECT_EQ(data.GetBundle("other", first->id).error().kind, ErrorKind::kNotFound);
}

// Uploading the same module again makes its bundle young again (the retention spares it) only
// when it is older than kBundleRefreshAfter: a deploy of an unchanged module writes nothing.
TEST_P(DeploymentStoreTest, ABundleUploadedAgainIsMadeYoungOnlyOnceItIsOld) {
  auto& data = store_->DeploymentData();
  auto first = data.PutBundle("acme", "module bytes");
  ASSERT_TRUE(first) << first.error().ToString();
  auto raw = GetParam() == Backend::kSqlite ? OpenSqlite(url_.substr(7)) : OpenPostgres(url_);
  ASSERT_TRUE(raw);
  auto stored_at = [&] {
    auto rows = (*raw)->Query("SELECT created_at FROM bundles WHERE id = $1", {first->id});
    EXPECT_TRUE(rows && rows->size() == 1);
    return rows && rows->size() == 1 ? rows->front().Int(0) : -1;
  };
  int64_t young = first->created_at - 1000;  // uploaded a second ago
  ASSERT_TRUE((*raw)->Execute("UPDATE bundles SET created_at = $1", {young}));
  auto again = data.PutBundle("acme", "module bytes");
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(stored_at(), young) << "a young bundle is left as it is";
  EXPECT_EQ(again->created_at, young) << "and the upload says when it was made";

  int64_t old = first->created_at - kBundleRefreshAfter.count() - 1000;
  ASSERT_TRUE((*raw)->Execute("UPDATE bundles SET created_at = $1", {old}));
  auto refreshed = data.PutBundle("acme", "module bytes");
  ASSERT_TRUE(refreshed) << refreshed.error().ToString();
  EXPECT_GE(stored_at(), first->created_at) << "an old one is young again";
  EXPECT_EQ(refreshed->created_at, stored_at());
}

// Secrets at rest: what berthd seals is ciphertext in the database (read here with plain SQL),
// reads back as it was written, and opens only in its own column and row. Whoever can write the
// database but not the key file plants nothing: a value in clear, another row's value and an
// older version are refused. Reseal seals everything again with a new key, bound to its row (a
// v1 value of a key from before too); a value in clear only when the operator asks.
TEST_P(DeploymentStoreTest, SecretColumnsAreSealedAtRestBoundToTheirRowAndResealedWithANewKey) {
  ASSERT_TRUE(store_->EnsureSharedSecret("legacy", "legacy-secret-1"));  // before: plaintext
  auto keys_dir = sys::TempDir::Create("store-keys");
  ASSERT_TRUE(keys_dir);
  // A key file from before format v2: its key opens v1 values (bound to their column only).
  const std::string old_secret(32, 'o');
  ASSERT_TRUE(
      sys::WriteFileAtomic(keys_dir->Path() / "keys", "kold " + Base64Encode(old_secret) + "\n"));
  auto keys = crypto::KeyRing::OpenOrCreate(keys_dir->Path() / "keys");
  ASSERT_TRUE(keys) << keys.error().ToString();
  store_.reset();
  auto sealed = OpenStore(url_, 2, *keys);
  ASSERT_TRUE(sealed) << sealed.error().ToString();
  store_ = std::move(*sealed);

  Deployment d{.org_id = "acme", .project_id = "web", .env_id = "dev", .id = "d1"};
  d.spec = {
      .op = DeploymentOp::kApply, .source_path = "/m", .variables = {{"password", "dep-secret-2"}}};
  ASSERT_TRUE(store_->Deployments().Create(d));
  Deployment other = d;
  other.id = "d2";
  other.spec.variables = {{"password", "other-secret"}};
  ASSERT_TRUE(store_->Deployments().Create(other));
  auto& data = store_->DeploymentData();
  ASSERT_TRUE(data.PutArtifact("acme", "d1", {.name = "plan", .content = "plan-secret-3"}));
  ASSERT_TRUE(store_->States().Put("acme/web/dev", R"({"pw":"state-secret-0"})", "", "r0"));
  ASSERT_TRUE(store_->States().Put("acme/web/dev", R"({"pw":"state-secret-4"})", "", "r1"));
  ASSERT_TRUE(store_->EnsureSharedSecret("seed", "seed-secret-5"));
  auto raw = GetParam() == Backend::kSqlite ? OpenSqlite(url_.substr(7)) : OpenPostgres(url_);
  ASSERT_TRUE(raw);
  // A v1 value (as a berthd before v2 sealed it) under the old key.
  ASSERT_TRUE((*raw)->Execute(
      "INSERT INTO shared_secrets (name, value, created_at) VALUES ('v1', $1, 0)",
      {"berth-sealed:v1:kold:" +
       Base64Encode(crypto::AesGcmSeal(old_secret, "v1-secret-6", kSharedSecretContext))}));

  auto read_back = [&] {
    EXPECT_EQ(store_->Deployments().Get("acme", "d1")->spec.variables["password"], "dep-secret-2");
    EXPECT_EQ(data.GetArtifact("acme", "d1", "plan")->content, "plan-secret-3");
    EXPECT_EQ(*store_->States().Current("acme/web/dev"), R"({"pw":"state-secret-4"})");
    EXPECT_EQ(*store_->EnsureSharedSecret("seed", "another"), "seed-secret-5");
    EXPECT_EQ(*store_->EnsureSharedSecret("v1", "another"), "v1-secret-6");
  };
  // Every sealed column's values, as the database holds them.
  auto on_disk = [&] {
    std::string all;
    for (const char* query :
         {"SELECT spec FROM deployments", "SELECT content FROM deployment_artifacts",
          "SELECT content FROM state_versions", "SELECT value FROM shared_secrets"}) {
      auto rows = (*raw)->Query(query);
      EXPECT_TRUE(rows);
      for (const auto& row : *rows) all += row.Text(0) + "\n";
    }
    return all;
  };
  read_back();
  std::string before = on_disk();
  for (const char* secret : {"dep-secret-2", "state-secret-4", "seed-secret-5", "v1-secret-6"})
    EXPECT_EQ(before.find(secret), std::string::npos) << secret << " in\n" << before;
  EXPECT_EQ(before.find(Base64Encode("plan-secret-3")), std::string::npos) << before;
  EXPECT_NE(before.find("legacy-secret-1"), std::string::npos);  // written in clear before keys
  auto legacy = store_->EnsureSharedSecret("legacy", "another");
  ASSERT_FALSE(legacy) << "a value in clear was taken";
  EXPECT_NE(legacy.error().message.find("--seal-plaintext"), std::string::npos)
      << legacy.error().message;

  // Planted values: one in clear, one moved from another column, one from another row, an
  // older version in the newest's place. Each is refused; put back, each reads again.
  auto planted = [&](const std::string& update, const std::vector<SqlValue>& args,
                     const std::function<bool()>& read) {
    SCOPED_TRACE(update);
    ASSERT_TRUE((*raw)->Execute(update, args));
    EXPECT_FALSE(read());
  };
  auto text = [&](const std::string& query) { return (*raw)->Query(query)->front().Text(0); };
  const std::string seed = text("SELECT value FROM shared_secrets WHERE name = 'seed'");
  const std::string v1_value = text("SELECT value FROM shared_secrets WHERE name = 'v1'");
  const std::string d1_spec = text("SELECT spec FROM deployments WHERE id = 'd1'");
  const std::string newest =
      text("SELECT content FROM state_versions WHERE state_key = 'acme/web/dev' AND version = 2");
  auto read_seed = [&] { return static_cast<bool>(store_->EnsureSharedSecret("seed", "x")); };
  planted("UPDATE shared_secrets SET value = 'known-seed' WHERE name = 'seed'", {}, read_seed);
  planted("UPDATE shared_secrets SET value = $1 WHERE name = 'seed'", {d1_spec}, read_seed);
  ASSERT_TRUE((*raw)->Execute("UPDATE shared_secrets SET value = $1 WHERE name = 'seed'", {seed}));
  planted("UPDATE deployments SET spec = $1 WHERE id = 'd2'", {d1_spec},
          [&] { return static_cast<bool>(store_->Deployments().Get("acme", "d2")); });
  planted(
      "UPDATE state_versions SET content = (SELECT content FROM state_versions WHERE "
      "state_key = 'acme/web/dev' AND version = 1) WHERE state_key = 'acme/web/dev' AND version = "
      "2",
      {}, [&] { return static_cast<bool>(store_->States().Current("acme/web/dev")); });
  ASSERT_TRUE((*raw)->Execute(
      "UPDATE state_versions SET content = $1 WHERE state_key = 'acme/web/dev' AND version = 2",
      {newest}));
  ASSERT_TRUE((*raw)->Execute("DELETE FROM deployments WHERE id = 'd2'"));
  read_back();

  std::string old_key = (*keys)->CurrentKeyId();
  ASSERT_TRUE((*keys)->AddCurrentKey());
  auto resealed = store_->Reseal(**keys, false);
  ASSERT_TRUE(resealed) << resealed.error().ToString();
  // d1's spec, its plan, two state versions, seed, v1, the run-token seed if any.
  EXPECT_GE(resealed->resealed, 6);
  EXPECT_EQ(resealed->left_in_clear, 1);
  EXPECT_EQ(resealed->keys_in_use, std::set<std::string>{(*keys)->CurrentKeyId()});
  EXPECT_FALSE(resealed->changed_meanwhile);
  EXPECT_FALSE(store_->EnsureSharedSecret("legacy", "another")) << "sealed unasked";
  // The old key, which opened v1 values (bound to their column only), is dropped: a v1 value
  // kept from before (a backup) opens in no row now.
  ASSERT_TRUE((*keys)->KeepOnly(resealed->keys_in_use));
  const std::string seed_now = text("SELECT value FROM shared_secrets WHERE name = 'seed'");
  planted("UPDATE shared_secrets SET value = $1 WHERE name = 'seed'", {v1_value}, read_seed);
  planted("UPDATE shared_secrets SET value = $1 WHERE name = 'seed'",
          {text("SELECT value FROM shared_secrets WHERE name = 'v1'")}, read_seed);
  ASSERT_TRUE(
      (*raw)->Execute("UPDATE shared_secrets SET value = $1 WHERE name = 'seed'", {seed_now}));
  auto with_plaintext = store_->Reseal(**keys, true);
  ASSERT_TRUE(with_plaintext) << with_plaintext.error().ToString();
  EXPECT_EQ(with_plaintext->resealed, 1);
  EXPECT_EQ(with_plaintext->left_in_clear, 0);
  std::string after = on_disk();
  EXPECT_EQ(after.find("legacy-secret-1"), std::string::npos) << after;
  EXPECT_EQ(after.find(old_key), std::string::npos) << after;
  EXPECT_EQ(after.find("berth-sealed:v1:"), std::string::npos) << after;
  read_back();
  EXPECT_EQ(*store_->EnsureSharedSecret("legacy", "another"), "legacy-secret-1");
  EXPECT_EQ(store_->Reseal(**keys, false)->resealed, 0);  // nothing left to do
}

// kubernetes-agent runners' command queues (store/agent_store.h).
class AgentStoreTest : public StoreTest {
 protected:
  RunnerCommand Command(const std::string& run, int64_t expires_at = 1'000'000,
                        const std::string& kind = "create-job", const std::string& runner = "a") {
    return {.org_id = "acme",
            .runner_id = runner,
            .kind = kind,
            .run_id = run,
            .payload = {{"request", {{"run_id", run}}}},
            .created_at = 1000,
            .expires_at = expires_at};
  }
  AgentStore& Agents() { return store_->Agents(); }
};

TEST_P(AgentStoreTest, CommandsAreDeliveredInOrderAtLeastOnceEachDeliveryWithItsReceipt) {
  auto first = Agents().Enqueue(Command("run-1"));
  ASSERT_TRUE(first) << first.error().ToString();
  auto second = Agents().Enqueue(Command("run-2"));
  ASSERT_TRUE(second);
  EXPECT_LT(first->seq, second->seq);
  // A launch repeated (after a restart) is the command that exists.
  auto again = Agents().Enqueue(Command("run-1"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->seq, first->seq);
  EXPECT_EQ(*Agents().Depth("acme", "a"), 2);

  auto one = Agents().Lease("acme", "a", "agent-x", "receipt-1", 2000, 92000);
  ASSERT_TRUE(one && *one);
  EXPECT_EQ((*one)->run_id, "run-1");
  EXPECT_EQ((*one)->payload["request"]["run_id"], "run-1");
  auto two = Agents().Lease("acme", "a", "agent-y", "receipt-2", 2000, 92000);
  ASSERT_TRUE(two && *two);
  EXPECT_EQ((*two)->run_id, "run-2");
  EXPECT_FALSE(*Agents().Lease("acme", "a", "agent-x", "receipt-3", 2000, 92000));
  // Another runner's agent, or another organization's, sees none of them.
  EXPECT_FALSE(*Agents().Lease("acme", "b", "agent-x", "receipt-4", 2000, 92000));
  EXPECT_FALSE(*Agents().Lease("other", "a", "agent-x", "receipt-5", 2000, 92000));

  auto wrong = Agents().Ack("acme", "a", (*one)->seq, "receipt-2");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind, ErrorKind::kConflict);
  auto acked = Agents().Ack("acme", "a", (*one)->seq, "receipt-1");
  ASSERT_TRUE(acked) << acked.error().ToString();
  EXPECT_EQ(acked->state, "done");
  auto twice = Agents().Ack("acme", "a", (*one)->seq, "receipt-1");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("done already"), std::string::npos);

  // run-2's agent died holding it: once its lease lapses it is delivered again, and the old
  // receipt is stale.
  EXPECT_FALSE(*Agents().Lease("acme", "a", "agent-z", "receipt-6", 91999, 181999));
  auto redelivered = Agents().Lease("acme", "a", "agent-z", "receipt-7", 92000, 182000);
  ASSERT_TRUE(redelivered && *redelivered);
  EXPECT_EQ((*redelivered)->run_id, "run-2");
  EXPECT_EQ((*redelivered)->deliveries, 2);
  EXPECT_EQ((*redelivered)->agent, "agent-z");
  auto stale = Agents().Ack("acme", "a", (*two)->seq, "receipt-2");
  ASSERT_FALSE(stale);
  EXPECT_NE(stale.error().message.find("stale"), std::string::npos);
  // Extended, it is not delivered again when the first lease would have lapsed.
  ASSERT_TRUE(Agents().Extend("acme", "a", (*two)->seq, "receipt-7", 300000));
  EXPECT_FALSE(*Agents().Lease("acme", "a", "agent-x", "receipt-8", 200000, 290000));
  auto rejected = Agents().Reject("acme", "a", (*two)->seq, "receipt-7", "no such namespace");
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected->state, "rejected");
  auto dead = Agents().List("acme", "a", "rejected", 10);
  ASSERT_TRUE(dead);
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ(dead->front().reason, "no such namespace");
  EXPECT_EQ(*Agents().Depth("acme", "a"), 0);
}

TEST_P(AgentStoreTest, AgentsRacingForOneQueueTakeEachCommandOnce) {
  constexpr int kCommands = 40;
  for (int i = 0; i < kCommands; ++i)
    ASSERT_TRUE(Agents().Enqueue(Command("run-" + std::to_string(i))));
  Mutex mutex;
  std::vector<std::string> taken;
  std::vector<std::thread> agents;
  agents.reserve(4);
  for (int a = 0; a < 4; ++a) {
    agents.emplace_back([&, a] {
      for (int tries = 0; tries < 200; ++tries) {
        auto next =
            Agents().Lease("acme", "a", "agent-" + std::to_string(a),
                           "r" + std::to_string(a) + "-" + std::to_string(tries), 2000, 92000);
        if (next && *next) {
          MutexLock lock(mutex);
          taken.push_back((*next)->run_id);
        }
      }
    });
  }
  for (auto& t : agents) t.join();
  std::set<std::string> unique(taken.begin(), taken.end());
  EXPECT_EQ(taken.size(), static_cast<size_t>(kCommands));
  EXPECT_EQ(unique.size(), static_cast<size_t>(kCommands));
}

TEST_P(AgentStoreTest, ALaunchNoAgentTookExpiresOnceAndACancelDropsItBeforeDelivery) {
  ASSERT_TRUE(Agents().Enqueue(Command("delivered", 5000)));
  ASSERT_TRUE(Agents().Enqueue(Command("cancelled", 5000)));
  ASSERT_TRUE(Agents().Enqueue(Command("never-taken", 5000)));
  auto dropped = Agents().Drop("acme", "a", "create-job", "cancelled", "cancelled by a person");
  ASSERT_TRUE(dropped);
  EXPECT_TRUE(*dropped);
  auto delivered = Agents().Lease("acme", "a", "agent", "receipt", 4000, 94000);
  ASSERT_TRUE(delivered && *delivered);
  EXPECT_EQ((*delivered)->run_id, "delivered");
  ASSERT_TRUE(Agents().Ack("acme", "a", (*delivered)->seq, "receipt"));
  // Taken already: a cancel cannot drop it (it goes through the queue instead).
  EXPECT_FALSE(*Agents().Drop("acme", "a", "create-job", "delivered", "too late"));
  EXPECT_FALSE(*Agents().Lease("acme", "a", "agent", "receipt-2", 5000, 95000));
  auto expired = Agents().Expire(5000);
  ASSERT_TRUE(expired) << expired.error().ToString();
  ASSERT_EQ(expired->size(), 1u);
  EXPECT_EQ(expired->front().run_id, "never-taken");
  EXPECT_TRUE(Agents().Expire(6000)->empty());  // each once
  auto create = Agents().CreateJobOf("acme", "a", "cancelled");
  ASSERT_TRUE(create && *create);
  EXPECT_EQ((*create)->state, "dropped");
}

TEST_P(AgentStoreTest, TokenIdsAreUsedOnceAndTheFirstReportedEndWins) {
  EXPECT_TRUE(*Agents().UseTokenId("jti-0123456789abcdef", 10'000, 1000));
  EXPECT_FALSE(*Agents().UseTokenId("jti-0123456789abcdef", 10'000, 2000));
  // Forgotten once expired (the token itself is refused by then).
  EXPECT_TRUE(*Agents().UseTokenId("jti-0123456789abcdef", 30'000, 20'000));

  EXPECT_TRUE(*Agents().PutRunEnd({"acme", "a", "run-1", {{"ended_as", "OOMKilled"}}, 1}));
  EXPECT_FALSE(*Agents().PutRunEnd({"acme", "a", "run-1", {{"ended_as", ""}}, 2}));
  auto ends = Agents().RunEnds({"run-1", "run-2"});
  ASSERT_TRUE(ends);
  ASSERT_EQ(ends->size(), 1u);
  EXPECT_EQ(ends->front().outcome["ended_as"], "OOMKilled");
  ASSERT_TRUE(Agents().DeleteRunEnd("run-1"));
  EXPECT_TRUE(Agents().RunEnds({"run-1"})->empty());

  ASSERT_TRUE(Agents().RecordPoll({"acme", "a", "agent-1", "0.1.0", 1000}));
  ASSERT_TRUE(Agents().RecordPoll({"acme", "a", "agent-2", "0.1.0", 3000}));
  ASSERT_TRUE(Agents().RecordPoll({"acme", "a", "agent-1", "0.2.0", 2000}));
  auto agents = Agents().Agents("acme", "a");
  ASSERT_TRUE(agents);
  ASSERT_EQ(agents->size(), 2u);
  EXPECT_EQ(agents->front().agent, "agent-2");
  EXPECT_EQ(agents->back().version, "0.2.0");
}

INSTANTIATE_TEST_SUITE_P(Backends, AgentStoreTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const auto& row) {
                           return row.param == Backend::kSqlite ? "Sqlite" : "Postgres";
                         });

INSTANTIATE_TEST_SUITE_P(Backends, DeploymentStoreTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const auto& row) {
                           return row.param == Backend::kSqlite ? "Sqlite" : "Postgres";
                         });

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest,
                         ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const auto& row) {
                           return row.param == Backend::kSqlite ? "Sqlite" : "Postgres";
                         });

}  // namespace
}  // namespace berth::store
