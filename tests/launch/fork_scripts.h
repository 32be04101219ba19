// Python programs the process-limit tests run in sandboxes: a fork bomb that holds what it got,
// and a program that needs many processes at once. Neither holds a single quote, so that a
// shell's '...' can carry it.
#pragma once

#include <string>

namespace berth::launch {

// Forks children (that sleep, their output closed) until refused, lets `release` of them go
// (what runs beside it in the sandbox may need room), then says how many it holds: prints
// "holding N children" and writes N to the file held in its working folder. Holds them until
// it is killed.
inline std::string HeldForkBomb(int release) {
  const std::string r = std::to_string(release);
  return "import os, time\n"
         "children = []\n"
         "try:\n"
         "    while len(children) < 2000:\n"
         "        pid = os.fork()\n"
         "        if pid == 0:\n"
         "            os.close(1); os.close(2); time.sleep(600); os._exit(0)\n"
         "        children.append(pid)\n"
         "except OSError:\n"
         "    pass\n"
         "for pid in children[:" +
         r +
         "]:\n"
         "    os.kill(pid, 9); os.waitpid(pid, 0)\n"
         "held = len(children) - " +
         r +
         "\n"
         "open(\"held\", \"w\").write(str(held))\n"
         "print(\"holding\", held, \"children\", flush=True)\n"
         "time.sleep(600)\n";
}

// Forks n children at once, each living a second, waits for them all, and prints "forked N";
// fails (an OSError) when the process limit refuses one.
inline std::string ForksAtOnce(int n) {
  return "import os, time\n"
         "children = []\n"
         "for i in range(" +
         std::to_string(n) +
         "):\n"
         "    pid = os.fork()\n"
         "    if pid == 0:\n"
         "        time.sleep(1); os._exit(0)\n"
         "    children.append(pid)\n"
         "for pid in children:\n"
         "    os.waitpid(pid, 0)\n"
         "print(\"forked\", len(children), flush=True)\n";
}

}  // namespace berth::launch
