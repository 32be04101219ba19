// A relay copies both ways, ends each side's stream when the other does, and takes its
// connections down with it.
#include "sys/stream_relay.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>

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

}  // namespace
}  // namespace berth::sys
