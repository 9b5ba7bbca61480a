// rdmaio/verbs against a real device: discovery, protection domains, the registrar's checks and
// the registered slab pool. Needs an active RDMA port (Soft-RoCE in tests/rdma's VM, or a NIC);
// without one it prints why and exits 77 before any test case runs, so it never passes vacuously.
#define DOCTEST_CONFIG_IMPLEMENT
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include <doctest/doctest.h>
#include <sys/mman.h>

#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/registrar.h"

namespace reelfs::rdmaio::verbs {
namespace {

DevicePort g_port;

TEST_CASE("ListDevices sees the active device and FindActivePort names what it found") {
  auto devices = ListDevices();
  REQUIRE(devices.ok());
  REQUIRE_FALSE(devices->empty());
  CHECK(DescribeDevices(*devices).find(g_port.device) != std::string::npos);
  auto missing = FindActivePort("no-such-device");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find(g_port.device) != std::string_view::npos);
}

TEST_CASE("VerbsRegistrar registers page-aligned host memory and rejects the rest") {
  auto pd = ProtectionDomain::Open(g_port);
  REQUIRE(pd.ok());
  VerbsRegistrar registrar(*pd);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* mem = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  auto* bytes = static_cast<std::byte*>(mem);
  {
    auto region = registrar.Register(HostMemory{{bytes, 4 * page}});
    REQUIRE(region.ok());
    CHECK((*region)->kind() == MemoryKind::kHost);
    CHECK((*region)->length() == 4 * page);
    CHECK((*region)->host_bytes().data() == bytes);
    auto* verbs_region = dynamic_cast<VerbsRegion*>(region->get());
    REQUIRE(verbs_region != nullptr);
    CHECK(verbs_region->remote_addr() == reinterpret_cast<uint64_t>(bytes));
  }
  auto misaligned = registrar.Register(HostMemory{{bytes + 1, page}});
  CHECK(misaligned.status().code() == StatusCode::kInvalidArgument);
  auto empty = registrar.Register(HostMemory{});
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);
  auto no_fd = registrar.Register(DmaBufMemory{.fd = -1, .length = page});
  CHECK(no_fd.status().code() == StatusCode::kInvalidArgument);
  munmap(mem, 4 * page);
}

// HugePages_Free from /proc/meminfo, -1 if unreadable.
long FreeHugePages() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  long value = 0;
  while (meminfo >> key >> value) {
    if (key == "HugePages_Free:") return value;
    meminfo.ignore(256, '\n');
  }
  return -1;
}

TEST_CASE("AllocateArena gives registered, 2 MiB-aligned, writable memory") {
  auto pd = ProtectionDomain::Open(g_port);
  REQUIRE(pd.ok());
  VerbsRegistrar registrar(*pd);
  const long free_before = FreeHugePages();
  auto arena = registrar.AllocateArena(size_t{4} << 20);
  REQUIRE(arena.ok());
  if (free_before >= 2) {
    // Reserved hugepages (the VM reserves some): the arena must have used two of them,
    // pinned by the registration.
    CHECK(FreeHugePages() == free_before - 2);
  } else {
    MESSAGE("no free reserved hugepages: the arena used the MADV_HUGEPAGE fallback");
  }
  auto bytes = (*arena)->host_bytes();
  CHECK(bytes.size() == size_t{4} << 20);
  CHECK(reinterpret_cast<uintptr_t>(bytes.data()) % (size_t{2} << 20) == 0);
  bytes.front() = std::byte{1};
  bytes.back() = std::byte{2};
  CHECK((*arena)->rkey() != 0);
  CHECK(registrar.AllocateArena(0).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("RegisteredSlabPool hands out distinct slots, runs out, and takes them back") {
  auto pd = ProtectionDomain::Open(g_port);
  REQUIRE(pd.ok());
  VerbsRegistrar registrar(*pd);
  constexpr size_t kSlot = 64 << 10;
  auto pool = RegisteredSlabPool::Create(registrar, kSlot, 4);
  REQUIRE(pool.ok());
  std::vector<std::unique_ptr<RegisteredSlice>> slices;
  std::set<uint64_t> addrs;
  for (int i = 0; i < 4; ++i) {
    auto s = (*pool)->Allocate(kSlot);
    REQUIRE(s.ok());
    CHECK((*s)->bytes().size() == kSlot);
    CHECK((*s)->remote_addr() == reinterpret_cast<uint64_t>((*s)->bytes().data()));
    CHECK((*s)->rkey() == (*pool)->region()->rkey());
    addrs.insert((*s)->remote_addr());
    slices.push_back(std::move(*s));
  }
  CHECK(addrs.size() == 4);
  CHECK((*pool)->Allocate(1).status().code() == StatusCode::kResourceExhausted);
  CHECK((*pool)->Allocate(kSlot + 1).status().code() == StatusCode::kInvalidArgument);
  const uint64_t freed = slices[2]->remote_addr();
  slices.erase(slices.begin() + 2);
  auto again = (*pool)->Allocate(100);
  REQUIRE(again.ok());
  CHECK((*again)->remote_addr() == freed);
  CHECK(RegisteredSlabPool::Create(registrar, 100, 4).status().code() ==
        StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reelfs::rdmaio::verbs

int main(int argc, char** argv) {
  auto port = reelfs::rdmaio::verbs::FindActivePort("");
  if (!port.ok()) {
    std::printf("skip: %s\n", port.status().ToString().c_str());
    return 77;
  }
  reelfs::rdmaio::verbs::g_port = *port;
  doctest::Context context(argc, argv);
  return context.run();
}
