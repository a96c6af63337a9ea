// keep.cc — who keeps a leak, in C++ (issue 41): every session makes two nodes that own each
// other through std::shared_ptr (a cycle: their counts never reach zero) and parks one in a
// static array, as a registry would. `leakgate exec` must name the static as the root.
//
//   exec_keep_cxx SESSIONS [clean]
#include <leakgate.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace {

struct Node {
    std::shared_ptr<Node> next; // the cycle
    std::vector<char> payload;
};

std::shared_ptr<Node> g_registry[1024]; // the holder

__attribute__((noinline)) std::shared_ptr<Node> make_pair_cycle()
{
    auto a = std::make_shared<Node>();
    auto b = std::make_shared<Node>();
    a->payload.assign(200, 'a');
    b->payload.assign(200, 'b');
    a->next = b;
    b->next = a;
    return a;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: exec_keep_cxx SESSIONS [clean]\n");
        return 2;
    }
    int sessions = std::atoi(argv[1]);
    bool clean = argc > 2;
    for (int s = 0; s < sessions && s < 1024; s++) {
        if (leakgate_session_begin() != LEAKGATE_OK) return 10;
        auto a = make_pair_cycle();
        if (clean)
            a->next->next.reset(); // the cycle broken: both go when `a` does
        else
            g_registry[s] = a;
        if (leakgate_session_end() != LEAKGATE_OK) return 11;
    }
    std::printf("exec_keep_cxx: %d sessions\n", sessions);
    return 0;
}
