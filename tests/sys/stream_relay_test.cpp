// A relay copies both ways, ends each side's stream when the other does, and takes its
// connections down with it.
#include "sys/stream_relay.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "sys/files.h"

namespace berth::sys {
namespace {

// Reads until the peer shuts its side down.
std::string ReadToEnd(int fd) {
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;)
    out.append(buffer, static_cast<size_t>(n));
  return out;
}

TEST(StreamRelay, CopiesBothWaysBetweenLoopbackAndAUnixSocket) {
  auto dir = TempDir::Create("relay");
  ASSERT_TRUE(dir);
  const std::string socket = (dir->Path() / "berthd.sock").string();
  auto server = ListenUnix(socket);
  ASSERT_TRUE(server) << server.error().message;
  int port = 0;
  auto listener = ListenLoopback(port);
  ASSERT_TRUE(listener) << listener.error().message;
  auto relay = StreamRelay::Start(std::move(*listener), [&socket] { return ConnectUnix(socket); });
  ASSERT_TRUE(relay);

  auto client = ConnectTcp("127.0.0.1", port);
  ASSERT_TRUE(client) << client.error().message;
  Fd accepted(::accept(server->Get(), nullptr, nullptr));
  ASSERT_TRUE(accepted);
  const std::string request(200000, 'q');  // more than one read of the relay's buffer
  ASSERT_EQ(::send(client->Get(), request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  ::shutdown(client->Get(), SHUT_WR);
  EXPECT_EQ(ReadToEnd(accepted.Get()), request) << "the end of the request reaches the server";
  const std::string answer = "HTTP/1.1 200 OK\r\n\r\nfine";
  ASSERT_EQ(::send(accepted.Get(), answer.data(), answer.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(answer.size()));
  ::shutdown(accepted.Get(), SHUT_WR);
  EXPECT_EQ(ReadToEnd(client->Get()), answer);
}

TEST(StreamRelay, NothingBehindItClosesTheClientAndStoppingEndsItsConnections) {
  auto dir = TempDir::Create("relay");
  ASSERT_TRUE(dir);
  int port = 0;
  auto listener = ListenLoopback(port);
  ASSERT_TRUE(listener);
  const std::string missing = (dir->Path() / "nobody.sock").string();
  auto relay =
      StreamRelay::Start(std::move(*listener), [&missing] { return ConnectUnix(missing); });
  ASSERT_TRUE(relay);
  auto refused = ConnectTcp("127.0.0.1", port);
  ASSERT_TRUE(refused);
  EXPECT_EQ(ReadToEnd(refused->Get()), "") << "closed at once: no server behind the relay";

  const std::string socket = (dir->Path() / "berthd.sock").string();
  auto server = ListenUnix(socket);
  ASSERT_TRUE(server);
  int second_port = 0;
  auto second = ListenLoopback(second_port);
  ASSERT_TRUE(second);
  auto live = StreamRelay::Start(std::move(*second), [&socket] { return ConnectUnix(socket); });
  ASSERT_TRUE(live);
  auto client = ConnectTcp("127.0.0.1", second_port);
  ASSERT_TRUE(client);
  Fd accepted(::accept(server->Get(), nullptr, nullptr));
  ASSERT_TRUE(accepted);
  live->reset();  // the run ended: its relay goes, with its open connection
  EXPECT_EQ(ReadToEnd(client->Get()), "");
  EXPECT_FALSE(ConnectTcp("127.0.0.1", second_port)) << "nothing listens once it is gone";
}

// A module that opens connections without end gets the relay's cap of them at once and no
// more: the rest are closed as they come, and an ended one frees its place.
TEST(StreamRelay, ConnectionsBeyondItsCapAreClosedAtOnceAndAnEndedOneFreesItsPlace) {
  auto dir = TempDir::Create("relay");
  ASSERT_TRUE(dir);
  const std::string socket = (dir->Path() / "berthd.sock").string();
  auto server = ListenUnix(socket);
  ASSERT_TRUE(server);
  int port = 0;
  auto listener = ListenLoopback(port);
  ASSERT_TRUE(listener);
  auto relay = StreamRelay::Start(
      std::move(*listener), [&socket] { return ConnectUnix(socket); }, /*max_connections=*/2);
  ASSERT_TRUE(relay);
  std::vector<Fd> clients, accepted;
  for (int i = 0; i < 2; ++i) {
    auto client = ConnectTcp("127.0.0.1", port);
    ASSERT_TRUE(client);
    clients.push_back(std::move(*client));
    accepted.emplace_back(::accept(server->Get(), nullptr, nullptr));
    ASSERT_TRUE(accepted.back());
  }
  for (int i = 0; i < 3; ++i) {
    auto beyond = ConnectTcp("127.0.0.1", port);
    ASSERT_TRUE(beyond);
    EXPECT_EQ(ReadToEnd(beyond->Get()), "") << "a connection beyond the cap was kept";
  }
  // The first two still carry bytes.
  ASSERT_EQ(::send(clients[1].Get(), "ping", 4, MSG_NOSIGNAL), 4);
  char got[4] = {};
  ASSERT_EQ(::recv(accepted[1].Get(), got, sizeof got, MSG_WAITALL), 4);
  EXPECT_EQ(std::string(got, 4), "ping");
  // One ends; the next connection is relayed again.
  clients[0].Reset();
  accepted[0].Reset();
  Fd again;
  for (int i = 0; i < 100 && !again; ++i) {
    auto client = ConnectTcp("127.0.0.1", port);
    ASSERT_TRUE(client);
    pollfd waiting{.fd = server->Get(), .events = POLLIN, .revents = 0};
    if (::poll(&waiting, 1, 100) == 1) {
      Fd served(::accept(server->Get(), nullptr, nullptr));
      if (served) again = std::move(*client);
    }
  }
  EXPECT_TRUE(again) << "an ended connection did not free its place";
}

}  // namespace
}  // namespace berth::sys
