// `dynamiccl coord --port P --token-file F`: the TCP coordinator for multi-node online updates.
#include <CLI/CLI.hpp>

#include <csignal>
#include <iostream>
#include <memory>
#include <thread>

#include "coord/coord.h"
#include "offline/cli/commands.h"

namespace dynamiccl::cli {
namespace {
volatile std::sig_atomic_t gStop = 0;
}  // namespace

void addCoordCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("coord", "run the TCP coordinator that carries online table versions between nodes");
  auto port = std::make_shared<int>(0);
  auto tokenFile = std::make_shared<std::string>();
  auto listen = std::make_shared<std::string>("127.0.0.1");
  auto loopback = std::make_shared<bool>(false);
  cmd->add_option("--port", *port, "TCP port to listen on")->required()->check(CLI::Range(1, 65535));
  cmd->add_option("--token-file", *tokenFile, "file with the shared token (16..64 printable bytes, mode 600)")
      ->required();
  auto* listenOpt = cmd->add_option("--listen", *listen, "IPv4 address to listen on (0.0.0.0: every interface)")
                        ->capture_default_str()
                        ->check(CLI::ValidIPV4);
  cmd->add_flag("--loopback", *loopback, "listen on 127.0.0.1 only (the default)")->excludes(listenOpt);
  cmd->callback([port, tokenFile, listen, loopback] {
    auto token = coord::readTokenFile(*tokenFile);
    if (!token) {
      std::cerr << "coord: " << token.error() << "\n";
      throw CLI::RuntimeError(1);
    }
    const std::string address = *loopback ? "127.0.0.1" : *listen;
    auto server = coord::Server::start(*port, *token, {}, address);
    if (!server) {
      std::cerr << "coord: " << server.error() << "\n";
      throw CLI::RuntimeError(1);
    }
    std::signal(SIGINT, [](int) { gStop = 1; });
    std::signal(SIGTERM, [](int) { gStop = 1; });
    std::cout << "coord: listening on " << address << ":" << (*server)->port() << "\n" << std::flush;
    while (!gStop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*server)->stop();  // bounded: open connections are cancelled, not waited out
    const coord::ServerStats s = (*server)->stats();
    std::cout << "coord: " << s.requests << " requests, " << s.published << " records, " << s.refusedAuth
              << " refused (token), " << s.badRequests << " malformed, " << s.busy << " busy, " << s.rateLimited
              << " rate-limited\n";
  });
}

}  // namespace dynamiccl::cli
