#include "msl/lockstep.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/cpu_regions.h"
#include "msl/cpu_regions_syntax.h"
#include "msl/cpu_uniform_loops.h"
#include "msl/token_rules.h"

namespace alloy::msl {

namespace {

using Kind = BodyStmt::Kind;

// The CPU: where every thread of the group runs the block (the body's own
// scope, or a block that has a threadgroup barrier of its own), a
// threadgroup barrier, which the CPU's regions take anywhere such a barrier
// may be; elsewhere (a branch some lanes take) a SIMD-group barrier of the
// lanes present. CUDA: the lanes of the warp executing together, anywhere
// (runtime/cuda_sync.h).
constexpr const char* kGroupPoint = "threadgroup_barrier(mem_flags::mem_threadgroup);";
constexpr const char* kSimdPoint = "simdgroup_barrier(mem_flags::mem_threadgroup);";
constexpr const char* kWarpPoint = "::alloy_msl::lockstep_point();";

// One subscripted use of a threadgroup array.
struct Access {
  std::string array, subscript;  // "s", "tid + 16" (several subscripts joined by "][")
  bool read = false, write = false;
  bool per_thread = false;  // the subscript may differ between threads
};

class Lockstep {
 public:
  Lockstep(const std::vector<Token>& t, std::set<std::string> thread_names, Target target)
      : t_(t), thread_(std::move(thread_names)), target_(target) {}

  // The arrays of threadgroup storage the body declares.
  void find_arrays() {
    for (std::size_t k = 0; k < t_.size(); ++k) {
      if (!t_[k].is_ident("threadgroup") || !declares_threadgroup_storage(t_, k)) continue;
      for (std::size_t p = k + 1; p + 1 < t_.size(); ++p) {
        if (t_[p].is_punct(";") || t_[p].is_punct("=") || t_[p].is_punct("{")) break;
        if (t_[p].kind == TokenKind::Identifier && t_[p + 1].is_punct("[")) {
          arrays_.insert(t_[p].text);
          declared_at_.insert(p);
          break;
        }
      }
    }
  }
  bool has_arrays() const { return !arrays_.empty(); }

  // Names that may differ between threads: set by a statement (a
  // declaration's initialiser, an assignment, a for loop's init clause)
  // that reads one, until no more are found.
  void find_thread_names(const std::vector<BodyStmt>& body) {
    for (bool grew = true; grew;) {
      grew = false;
      walk_simple(body, [&](std::size_t b, std::size_t e) {
        if (!reads_thread_name(b, e)) return;
        for (std::size_t k = b; k < e; ++k) {
          if (t_[k].kind != TokenKind::Identifier || is_member_access(t_, k) || thread_.count(t_[k].text)) continue;
          const bool declared = k + 1 < e && (t_[k + 1].is_punct("=") || t_[k + 1].is_punct("(") ||
                                              t_[k + 1].is_punct("{")) &&
                                k > b && (t_[k - 1].kind == TokenKind::Identifier || t_[k - 1].is_punct(">") ||
                                          t_[k - 1].is_punct("*") || t_[k - 1].is_punct("&"));
          if (declared || changes_name_at(t_, k, false)) grew = thread_.insert(t_[k].text).second || grew;
        }
      });
    }
  }

  // The statements of `list` (a block's), where barriers go; `whole_group`:
  // every thread of the group runs them.
  void list(const std::vector<BodyStmt>& list, const BodyStmt* loop, bool whole_group) {
    std::vector<Access> run, head;  // since the last point; before the first
    bool pointed = false;
    for (const BodyStmt& s : list)
      whole_group = whole_group || (regions::is_barrier_statement(t_, s) && t_[s.begin].is("threadgroup_barrier"));
    const char* point = target_ == Target::Cuda ? kWarpPoint : whole_group ? kGroupPoint : kSimdPoint;
    for (const BodyStmt& s : list) {
      nested(s);
      if (s.kind == Kind::Directive) continue;
      if (regions::has_sync(t_, s.begin, s.end)) {
        run.clear();
        pointed = true;
        continue;
      }
      std::vector<Access> acc = accesses(s.begin, s.end);
      if (conflict(run, acc)) {
        add_before(s.begin, point);
        run.clear();
        pointed = true;
      }
      run.insert(run.end(), acc.begin(), acc.end());
      if (!pointed) head.insert(head.end(), acc.begin(), acc.end());
    }
    // The last statements of one trip against the first of the next.
    if (loop && conflict(run, head)) add_at_loop_end(*loop, point);
  }

  std::map<std::size_t, std::string> before, after;  // text to write at tokens
  std::set<int> lines;                               // of the statements a point precedes

 private:
  template <class F> void walk_simple(const std::vector<BodyStmt>& list, F f) {
    for (const BodyStmt& s : list) {
      if (s.kind == Kind::Simple) f(s.begin, s.end);
      if (s.kind == Kind::For) {
        std::size_t s1 = 0, s2 = 0;
        regions::for_clauses(t_, s, s1, s2);
        f(s.open + 1, s1);
        f(s2 + 1, s.close);
      }
      walk_simple(s.kids, f);
    }
  }

  bool reads_thread_name(std::size_t b, std::size_t e) const {
    for (std::size_t k = b; k < e; ++k)
      if (t_[k].kind == TokenKind::Identifier && !is_member_access(t_, k) && thread_.count(t_[k].text)) return true;
    return false;
  }

  void nested(const BodyStmt& s) {
    switch (s.kind) {
      case Kind::Block: list(s.kids, nullptr, false); break;
      case Kind::If:
        for (const BodyStmt& branch : s.kids)
          list(branch.kind == Kind::Block ? branch.kids : std::vector{branch}, nullptr, false);
        break;
      case Kind::For:
      case Kind::While:
      case Kind::Do: {
        std::vector<BodyStmt> one;
        list(regions::loop_body(s, one), &s, false);
        break;
      }
      default: break;
    }
  }

  std::vector<Access> accesses(std::size_t b, std::size_t e) const {
    std::vector<Access> out;
    for (std::size_t k = b; k < e; ++k) {
      if (t_[k].kind != TokenKind::Identifier || !arrays_.count(t_[k].text) || is_member_access(t_, k) ||
          declared_at_.count(k))
        continue;
      if (k + 1 >= e || !t_[k + 1].is_punct("[")) continue;
      if (k > b && t_[k - 1].is_punct("&")) continue;  // an atomic's address: atomics need no lockstep
      Access a;
      a.array = t_[k].text;
      std::size_t p = k + 1;
      while (p < e && t_[p].is_punct("[")) {
        const std::size_t close = matching_bracket(t_, p);
        if (close >= e) return out;
        if (p > k + 1) a.subscript += "][";
        for (std::size_t q = p + 1; q < close; ++q) {
          a.subscript += (q > p + 1 ? " " : "") + t_[q].text;
          a.per_thread = a.per_thread || (t_[q].kind == TokenKind::Identifier && thread_.count(t_[q].text));
        }
        p = close + 1;
      }
      // `s[i].x = v` writes the element as `s[i] = v` does.
      if (p + 1 < e && t_[p].is_punct(".") && t_[p + 1].kind == TokenKind::Identifier) p += 2;
      const bool assigned = p < e && is_assignment(t_[p]);
      const bool stepped = (p < e && (t_[p].is_punct("++") || t_[p].is_punct("--"))) ||
                           (k > b && (t_[k - 1].is_punct("++") || t_[k - 1].is_punct("--")));
      a.write = assigned || stepped;
      a.read = !assigned || !t_[p].is_punct("=");
      out.push_back(std::move(a));
    }
    return out;
  }

  static bool conflict(const std::vector<Access>& earlier, const std::vector<Access>& later) {
    for (const Access& a : earlier)
      for (const Access& b : later)
        if (a.array == b.array && ((a.write && b.read) || (a.read && b.write)) && a.subscript != b.subscript &&
            (a.per_thread || b.per_thread))
          return true;
    return false;
  }

  void add_before(std::size_t at, const char* point) {
    before[at] += std::string(point) + " ";
    lines.insert(t_[at].line);
  }

  void add_at_loop_end(const BodyStmt& loop, const char* point) {
    const BodyStmt& body = loop.kids[0];
    const std::size_t last = body.end - 1;
    if (body.kind == Kind::Block) {
      before[last] += std::string(point) + " ";
    } else {  // a body without braces gets them
      before[body.begin] = "{ " + before[body.begin];
      after[last] += std::string(" ") + point + " }";
    }
    lines.insert(t_[last].line);
  }

  const std::vector<Token>& t_;
  std::set<std::string> thread_;
  Target target_;
  std::set<std::string> arrays_;
  std::set<std::size_t> declared_at_;  // their names' tokens in their declarations
};

}  // namespace

std::optional<LockstepPoints> add_lockstep_points(const KernelSpec& spec, const LexedKernel& lexed, Target target) {
  const std::vector<Token>& t = lexed.source.tokens;
  std::set<std::string> thread_names = per_thread_attributes();
  for (const LexedText* text : {&lexed.source, &lexed.header})
    thread_names.insert(text->macros_naming_anything.begin(), text->macros_naming_anything.end());
  Lockstep pass(t, std::move(thread_names), target);
  pass.find_arrays();
  if (!pass.has_arrays()) return std::nullopt;
  // A form the statement parser does not read (a `for` header without its
  // two `;`): the body as written, whose errors the translation reports.
  try {
    const std::vector<BodyStmt> body = regions::parse_statements(t, 0, t.size());
    pass.find_thread_names(body);
    pass.list(body, nullptr, true);
  } catch (const regions::NotRegions&) {
    return std::nullopt;
  }
  if (pass.before.empty() && pass.after.empty()) return std::nullopt;

  LockstepPoints out;
  const std::string& src = spec.source;
  std::size_t copied = 0;
  for (std::size_t k = 0; k < t.size(); ++k) {
    auto b = pass.before.find(k);
    auto a = pass.after.find(k);
    if (b == pass.before.end() && a == pass.after.end()) continue;
    out.source.append(src, copied, t[k].begin - copied);
    copied = t[k].begin;
    if (b != pass.before.end()) out.source += b->second;
    if (a != pass.after.end()) {
      out.source.append(src, copied, t[k].end - copied);
      copied = t[k].end;
      out.source += a->second;
    }
  }
  out.source.append(src, copied, std::string::npos);
  out.note = target == Target::Cuda ? (pass.lines.size() > 1 ? "The warp's lanes wait for each other at lines "
                                                               : "The warp's lanes wait for each other at line ")
             : pass.lines.size() > 1    ? "Barriers are written in at lines "
                                        : "A barrier is written in at line ";
  bool first = true;
  for (int line : pass.lines) {
    out.note += (first ? "" : ", ") + std::to_string(line);
    first = false;
  }
  out.note += ": the body shares threadgroup memory between the lanes of a SIMD group there with no barrier, "
              "which Apple's GPUs, whose lanes run in lockstep, allow";
  return out;
}

}  // namespace alloy::msl
