#include "msl/cpu_regions.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "alloy/msl/program.h"

#include "msl/builtins.h"
#include "msl/cpu_regions_syntax.h"
#include "msl/cpu_uniform_loops.h"
#include "msl/cpu_uniform_values.h"
#include "msl/token_rules.h"
#include "msl/writer.h"

namespace alloy::msl {
namespace {

using namespace regions;
using Kind = BodyStmt::Kind;
using Out = std::vector<std::optional<std::string>>;

// SIMD-group calls one statement may make; consecutive statements use two
// sets of slots. The runtime's kRegionCallsPerStatement (metal_cpu_regions.h).
constexpr unsigned kCallsPerStatement = 4;

// A preprocessor line's directive: "if" for `#  if X`.
std::string directive_word(const std::string& line) {
  const std::size_t k = line.find_first_not_of(" \t#");
  if (k == std::string::npos || line.find('#') > k) return "";
  return line.substr(k, line.find_first_of(" \t(", k) - k);
}
// +1 for `#if`, `#ifdef` or `#ifndef`, -1 for `#endif`, 0 for another
// directive (`#else` and `#elif` stay inside the condition).
int conditional_directive(const std::string& line) {
  const std::string word = directive_word(line);
  if (word == "if" || word == "ifdef" || word == "ifndef") return 1;
  return word == "endif" ? -1 : 0;
}
bool is_conditional_directive(const std::string& line) {
  const std::string word = directive_word(line);
  return conditional_directive(line) != 0 || word == "elif" || word == "else";
}

// ---- the plan -----------------------------------------------------------------

class Planner {
 public:
  Planner(const std::vector<Token>& t, const UniformNames& names, const std::set<std::string>& changed_params,
          const std::set<std::size_t>& uniform_names)
      : t_(t), names_(names), changed_params_(changed_params), uniform_names_(uniform_names),
        block_end_(t.size(), t.size()) {
    // Each token's innermost enclosing block's `}` (a declaration's scope
    // ends there; a for loop's init clause's at the loop's end).
    std::vector<std::size_t> open;
    std::vector<std::size_t> inner(t.size(), t.size());
    std::map<std::size_t, std::size_t> closes;
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (!open.empty()) inner[k] = open.back();
      if (t[k].is_punct("{")) open.push_back(k);
      if (t[k].is_punct("}") && !open.empty()) {
        closes[open.back()] = k;
        open.pop_back();
      }
    }
    for (std::size_t k = 0; k < t.size(); ++k)
      if (auto c = closes.find(inner[k]); c != closes.end()) block_end_[k] = c->second;
  }

  void check(const std::vector<BodyStmt>& list, bool in_loop) {
    // Under a preprocessor condition only statements that stay in the
    // region open around it (the rewrite opens one before its `#if`): no
    // barrier, SIMD-group call or declaration at this level.
    int conditions = 0;
    for (const BodyStmt& s : list) {
      if (s.kind == Kind::Directive) {
        conditions += conditional_directive(t_[s.begin].text);
        if (conditions < 0) break;
      } else if (conditions > 0 && (has_sync(t_, s.begin, s.end) || group_declaration(t_, s) ||
                                    (s.kind == Kind::Simple && !declarators(t_, s.begin, s.end - 1).empty()))) {
        // (A declaration there may be the frame's, which would outlive a
        // false condition: the compiler must see it go.)
        throw NotRegions{"a barrier, SIMD-group call or declaration under a preprocessor condition (" +
                         line_of(t_[s.begin]) + ")"};
      }
    }
    if (conditions != 0) throw NotRegions{"a preprocessor condition that spans blocks"};
    for (const BodyStmt& s : list) {
      if (!has_sync(t_, s.begin, s.end)) {
        if (in_loop && jumps_out(t_, s))
          throw NotRegions{"a break or continue leaves a loop with barriers (" + line_of(t_[s.begin]) + ")"};
        continue;
      }
      switch (s.kind) {
        case Kind::Simple: check_simple(s); break;
        case Kind::Block: check(s.kids, in_loop); break;
        case Kind::For:
        case Kind::While: {
          if (has_sync(t_, s.open, s.close))
            throw NotRegions{"a loop header synchronises (" + line_of(t_[s.begin]) + ")"};
          std::vector<BodyStmt> one;
          check(loop_body(s, one), true);
          break;
        }
        case Kind::If:
          if (t_[s.open - 1].is_ident("constexpr"))
            throw NotRegions{"a barrier or SIMD-group call under `if constexpr` (" + line_of(t_[s.begin]) + ")"};
          if (uniform_if(s)) {
            for (const BodyStmt& branch : s.kids) {
              std::vector<BodyStmt> one;
              check(branch_list(branch, one), in_loop);
            }
            break;
          }
          // Threads may take it differently: SIMD-group calls in it cover
          // the lanes that take each branch (region_branch). A barrier there
          // is a divergent barrier, which coroutines and fibers report.
          if (branching_if(s)) {
            for (const BodyStmt& branch : s.kids) {
              std::vector<BodyStmt> one;
              check(branch_list(branch, one), true);  // (no break or continue out of it)
            }
            break;
          }
          [[fallthrough]];
        default:
          throw NotRegions{"a barrier or SIMD-group call under `" + t_[s.begin].text + "` (" + line_of(t_[s.begin]) +
                           "), which may not hold for every thread"};
      }
    }
  }

  // Region numbers: each group-level statement's tokens get the region it runs in.
  void number(const std::vector<BodyStmt>& list) {
    for (const BodyStmt& s : list) {
      if (!has_sync(t_, s.begin, s.end)) {
        // Threadgroup storage and constants are declared once for the group,
        // between regions.
        const bool between = group_declaration(t_, s);
        if (between) ++cur_;
        mark(s.begin, s.end, cur_);
        if (s.kind == Kind::Simple) declare(s.begin, s.end - 1, cur_, true);
        else if (s.kind == Kind::For) nested_for_init(s);
        collect_nested(s);
        if (between) ++cur_;
        continue;
      }
      if (s.kind == Kind::Simple) {
        if (is_barrier_statement(t_, s)) {
          ++cur_;
          continue;
        }
        // Deposits end the region before; the statement starts the next.
        for (auto [call, close] : simd_calls(t_, s)) mark(call, close + 1, cur_);
        ++cur_;
        mark(s.begin, s.end, cur_);
        declare(s.begin, s.end - 1, cur_, true);
        continue;
      }
      if (s.kind == Kind::Block) {
        // Its regions are its own, as the rewrite closes a region at either end.
        ++cur_;
        number(s.kids);
        ++cur_;
        continue;
      }
      // A branch every thread takes the same way: a plain `if` of the group
      // around each branch's regions. One threads may take differently
      // (check() allows no other): its condition in a region of its own,
      // then each branch's regions.
      if (s.kind == Kind::If) {
        const bool same_way = uniform_if(s);
        (same_way ? uniform_ifs_ : branching_ifs_).insert(s.begin);
        if (!same_way) mark(s.open + 1, s.close, ++cur_);
        for (const BodyStmt& branch : s.kids) {
          ++cur_;
          std::vector<BodyStmt> one;
          number(branch_list(branch, one));
        }
        ++cur_;
        continue;
      }
      // A loop every thread runs the same trips of: a plain loop of the
      // group around its body's regions; its counter an ordinary local.
      if (uniform(s)) {
        uniform_.insert(s.begin);
        ++cur_;
        std::vector<BodyStmt> one;
        number(loop_body(s, one));
        ++cur_;
        continue;
      }
      // Another loop with barriers: its init, its condition, its body and
      // its increment each run in regions of their own.
      std::size_t s1 = 0, s2 = 0;
      if (s.kind == Kind::For) {
        for_clauses(t_, s, s1, s2);
        ++cur_;
        mark(s.open + 1, s1, cur_);
        declare(s.open + 1, s1, cur_, true, s.end);
        ++cur_;
        mark(s1 + 1, s2, cur_);
      } else {
        ++cur_;
        mark(s.open + 1, s.close, cur_);
      }
      ++cur_;
      std::vector<BodyStmt> one;
      number(loop_body(s, one));
      ++cur_;
      if (s.kind == Kind::For) mark(s2 + 1, s.close, cur_);
      ++cur_;
    }
  }

  RegionsPlan finish(std::vector<BodyStmt> body) {
    RegionsPlan plan;
    plan.body = std::move(body);
    plan.uniform_loops = uniform_;
    plan.uniform_ifs = uniform_ifs_;
    plan.branching_ifs = branching_ifs_;
    // Constants declared from the frame's place on are not in scope for its
    // members' types (RegionsPlan::frame_at).
    // (A preprocessor condition's `#if` counts: the rewrite opens a region
    // there, whose loads need the frame.)
    plan.frame_at = t_.size();
    for (const BodyStmt& s : plan.body)
      if (s.kind == Kind::Directive ? is_conditional_directive(t_[s.begin].text) : !group_declaration(t_, s)) {
        plan.frame_at = s.begin;
        break;
      }
    for (const BodyStmt& s : plan.body) {
      if (s.begin <= plan.frame_at || !group_declaration(t_, s)) continue;
      const auto d = declaration(t_, s.begin, s.end - 1);
      if (type_alias(t_, s) || (d && d->constant && !d->threadgroup))
        plan.moved_constants.emplace_back(s.begin, s.end);
    }
    auto moved = [&](const Declaration& d) {
      for (auto [b, e] : plan.moved_constants)
        if (d.name >= b && d.name < e) return true;
      return false;
    };
    // A declaration at the body's own scope used in a region other than its
    // own: its value must live in a per-thread array. So must the others
    // its statement declares (`float a = x, b = y;` becomes `a = x, b = y;`).
    std::set<const Decl*> crossing;
    std::map<int, std::map<std::string, std::set<const Decl*>>> in_region;  // what each region uses
    for (const Use& u : uses_) {
      const Decl* d = resolve(u.token);
      if (!d || d->nested || uniform_names_.count(d->decl.name)) continue;  // (a uniform one: the group's)
      in_region[u.region][t_[u.token].text].insert(d);
      if (u.region != d->region) crossing.insert(d);
    }
    std::set<std::size_t> shared_statements;  // their first names
    for (const Decl* d : crossing)
      if (d->decl.multiple) shared_statements.insert(d->first_name);
    for (const auto& [name, decls] : decls_)
      for (const Decl& d : decls)
        if (!d.nested && shared_statements.count(d.first_name)) crossing.insert(&d);
    std::vector<const Decl*> ordered(crossing.begin(), crossing.end());
    std::sort(ordered.begin(), ordered.end(),
              [](const Decl* a, const Decl* b) { return a->decl.name < b->decl.name; });
    std::set<std::string> typed;         // the names plan.type_declarations repeat
    std::map<std::string, int> storages;  // the frame's arrays of each name so far
    std::map<const Decl*, std::string> storage_of;
    for (const Decl* own : ordered) {
      const std::string& name = t_[own->decl.name].text;
      // A name declared again in a block of its own (mlx-lm's losses: an
      // `offset` in each of two blocks) has an array of its own, unless one
      // region reads both (its one local could not be both).
      for (const auto& [region, names] : in_region)
        if (auto n = names.find(name); n != names.end() && n->second.size() > 1 && n->second.count(own))
          throw NotRegions{"'" + name + "' is declared more than once and one region reads two of them"};
      const Declaration& x = own->decl;
      if (x.multiple && (x.uses_auto || own->pointer || (x.array && x.init)))
        throw NotRegions{"'" + name +
                         "' is declared with others in one statement, in a form regions cannot split, and lives "
                         "across a barrier"};
      if (x.is_static) throw NotRegions{"'" + name + "' is static"};
      if (x.threadgroup || x.constant) continue;  // placed once for the group
      for (std::size_t k = x.type_begin; k < x.name; ++k)
        if (t_[k].is_punct("&") || t_[k].is_punct("&&"))
          throw NotRegions{"'" + name + "' is a reference and lives across a barrier"};
      const bool constructed = !x.array && (x.init == '(' || x.init == '{');
      if (constructed && x.uses_auto)
        throw NotRegions{"'" + name + "' is declared `auto` and initialised in a form regions cannot split (" +
                         line_of(t_[x.name]) + ")"};
      if (const std::string later = later_constant_in_type(x, plan.frame_at, moved); !later.empty())
        throw NotRegions{"'" + name + "' lives across a barrier and its type names '" + later +
                         "', a constant declared after the body's first statement"};
      if (x.uses_auto) {
        if (x.init != '=') throw NotRegions{"'" + name + "' is declared `auto` in a form regions cannot split"};
        deduce_type(*own, plan, typed, moved);
      }
      HoistedVariable h{x.type_begin, x.name, x.after, (!x.array && x.init == '=') || constructed,
                        x.array && x.init != 0, x.uses_auto};
      h.constructed = constructed;
      h.type_end = own->first_name;
      const int n = storages[name]++;
      h.storage = n == 0 ? name : "alloy_" + std::to_string(n) + "_" + name;  // (the body has no alloy_ names)
      storage_of[own] = h.storage;
      if (x.multiple && !h.initialised) {
        // Its `,` goes with it: the one before it, or for the first the next one's.
        h.separator = own->comma;
        if (!h.separator)
          for (const Declarator& d : declarators(t_, x.type_begin, own->end))
            if (d.comma && !h.separator) h.separator = d.comma;
      }
      plan.hoisted.push_back(h);
    }
    for (const Use& u : uses_)
      if (const Decl* d = resolve(u.token); d && storage_of.count(d)) plan.hoisted_uses[u.token] = storage_of.at(d);
    std::sort(plan.type_declarations.begin(), plan.type_declarations.end(),
              [](const TypeDeclaration& a, const TypeDeclaration& b) { return a.name < b.name; });
    return plan;
  }

 private:
  struct Use {
    std::size_t token;
    int region;
  };
  struct Decl {
    Declaration decl;
    int region;
    bool nested;
    std::size_t end;         // the token ending its statement (or its for loop's init clause)
    std::size_t comma;       // the `,` before it where it is not its statement's first declarator
    bool pointer;            // its own `*` or `&` (Declarator::pointer)
    std::size_t first_name;  // its statement's first declarator's name
    std::size_t scope_end;   // the token its scope ends at
  };
  // The declaration a use of a name at token k refers to: the latest one
  // before it whose scope holds it (none for a parameter, a loop counter of
  // a uniform loop, a program-scope name).
  const Decl* resolve(std::size_t k) const {
    auto found = decls_.find(t_[k].text);
    if (found == decls_.end()) return nullptr;
    const Decl* best = nullptr;
    for (const Decl& d : found->second)
      if (d.decl.name <= k && k < d.scope_end && (!best || d.decl.name > best->decl.name)) best = &d;
    return best;
  }

  // A name in declaration x's type or dimensions that is a constant
  // declared after the frame's place (and not moved before it), which the
  // frame's member could not name; "" for none.
  template <class Moved>
  std::string later_constant_in_type(const Declaration& x, std::size_t frame_at, const Moved& moved) const {
    for (std::size_t k = x.type_begin; k < x.after; ++k) {
      auto c = decls_.find(t_[k].text);
      if (k == x.name || t_[k].kind != TokenKind::Identifier || c == decls_.end()) continue;
      for (const Decl& d : c->second)
        if (d.decl.constant && d.decl.name > frame_at && !moved(d.decl)) return t_[k].text;
    }
    return "";
  }

  // The declarations a lambda must repeat to deduce the type of `name`,
  // declared `auto` at the body's own scope: its own and, through its
  // initialiser, those of the body's names it reads (their `auto` ones
  // in turn). Constants and threadgroup storage declared before the frame
  // are in scope there; the parameters and the thread's attributes too.
  template <class Moved>
  void deduce_type(const Decl& own_decl, RegionsPlan& plan, std::set<std::string>& seen, const Moved& moved) {
    const Decl* own = &own_decl;
    const std::string& name = t_[own->decl.name].text;
    const std::string why = "'" + name + "' is declared `auto`, lives across a barrier and ";
    // The lambda repeats declarations in one scope: one of each name.
    if (!seen.insert(name).second) {
      for (const TypeDeclaration& d : plan.type_declarations)
        if (t_[d.name].text == name && d.name != own->decl.name) throw NotRegions{why + "is declared more than once"};
      return;
    }
    const Declaration& x = own->decl;
    const std::size_t init = x.after + 1;
    if (has_sync(t_, init, own->end)) throw NotRegions{why + "is initialised by a SIMD-group call"};
    for (std::size_t k = x.type_begin; k < own->end; ++k) {
      const Token& tok = t_[k];
      if (tok.is_punct("{")) throw NotRegions{why + "its initialiser has a block (" + line_of(tok) + ")"};
      if (k == x.name || tok.kind != TokenKind::Identifier || is_member_access(t_, k) ||
          (k > 0 && t_[k - 1].is_punct("::")) || !names_.body_locals.count(tok.text) ||
          changed_params_.count(tok.text))
        continue;
      const Decl* dep = resolve(k);
      if (!dep) throw NotRegions{why + "its type depends on '" + tok.text + "', declared where it cannot be repeated"};
      if (dep->nested)
        throw NotRegions{why + "its type depends on '" + tok.text + "', declared in a nested statement"};
      if (dep->decl.constant || dep->decl.threadgroup) {
        if (dep->decl.name < plan.frame_at || moved(dep->decl)) continue;
        throw NotRegions{why + "its type depends on '" + tok.text + "', declared after the body's first statement"};
      }
      if (dep->decl.uses_auto) {
        deduce_type(*dep, plan, seen, moved);
      } else if (!seen.insert(tok.text).second) {
        for (const TypeDeclaration& d : plan.type_declarations)
          if (t_[d.name].text == tok.text && d.name != dep->decl.name)
            throw NotRegions{why + "its type depends on '" + tok.text + "', declared more than once"};
      } else {
        const Declaration& y = dep->decl;
        if (y.is_static || dep->pointer)
          throw NotRegions{why + "its type depends on '" + tok.text + "', declared where it cannot be repeated"};
        for (std::size_t j = y.type_begin; j < y.after; ++j)
          if (t_[j].is_punct("&") || t_[j].is_punct("&&"))
            throw NotRegions{why + "its type depends on '" + tok.text + "', a reference"};
        if (!later_constant_in_type(y, plan.frame_at, moved).empty())
          throw NotRegions{why + "its type depends on '" + tok.text + "', whose type names a later constant"};
        plan.type_declarations.push_back(
            {dep->decl.type_begin, dep->first_name, dep->decl.name, dep->decl.after, dep->end, false});
      }
    }
    if (x.multiple) throw NotRegions{why + "is declared with others"};
    plan.type_declarations.push_back({x.type_begin, x.name, x.name, x.after, own->end, true});
  }

  bool uniform(const BodyStmt& s) const { return s.kind == Kind::For && is_uniform_for(t_, s, names_); }
  bool uniform_if(const BodyStmt& s) const {
    return s.kind == Kind::If && is_uniform_condition(t_, s.open + 1, s.close, names_);
  }
  // An `if` whose branches have SIMD-group calls but no barrier, and whose
  // condition neither synchronises nor assigns (it is evaluated once per
  // thread, in a lambda of its own).
  bool branching_if(const BodyStmt& s) const {
    if (s.kind != Kind::If || has_sync(t_, s.open, s.close)) return false;
    for (std::size_t k = s.open + 1; k < s.close; ++k)
      if (changes_name_at(t_, k, /*or_address=*/false)) return false;
    for (std::size_t k = s.close; k < s.end; ++k)
      if (is_sync_call(t_, k) && is_barrier_name(t_[k].text)) return false;
    return true;
  }
  // A branch's statements (`one` holds a single statement's).
  static const std::vector<BodyStmt>& branch_list(const BodyStmt& b, std::vector<BodyStmt>& one) {
    if (b.kind == Kind::Block) return b.kids;
    one.assign(1, b);
    return one;
  }

  // A statement with a barrier or SIMD-group calls. In a loop, the calls
  // cover the lanes still in it: those that left wait after the loop
  // (region_loop) and take no part in the exchange (region_exchange), as
  // Metal's inactive threads.
  void check_simple(const BodyStmt& s) {
    if (is_barrier_statement(t_, s)) return;
    for (std::size_t k = s.begin; k < s.end; ++k)
      if (is_sync_call(t_, k) && is_barrier_name(t_[k].text))
        throw NotRegions{"a barrier inside a larger statement (" + line_of(t_[k]) + ")"};
    auto calls = simd_calls(t_, s);
    // A condition inside a call's arguments (`simd_sum(lane < n ? v : 0)`)
    // is each thread's own, evaluated where it deposits its value; one
    // around a call would leave some threads out of it.
    auto in_arguments = [&](std::size_t k) {
      for (auto [call, close] : calls)
        if (k > call && k < close) return true;
      return false;
    };
    for (std::size_t k = s.begin; k < s.end; ++k) {
      const Token& x = t_[k];
      if (((x.is_punct("?") || x.is_punct("&&") || x.is_punct("||")) && !in_arguments(k)) || x.is_ident("return"))
        throw NotRegions{"a SIMD-group call in a statement that evaluates parts conditionally (" + line_of(x) + ")"};
    }
    if (calls.size() > kCallsPerStatement)
      throw NotRegions{"more than " + std::to_string(kCallsPerStatement) + " SIMD-group calls in one statement (" +
                       line_of(t_[s.begin]) + ")"};
    for (auto [call, close] : calls) {
      std::size_t open = call;  // after the name and its qualifier, if any
      while (!t_[open].is_punct("(")) ++open;
      for (std::size_t k = open + 1; k < close; ++k) {
        const Token& x = t_[k];
        if (is_sync_call(t_, k)) throw NotRegions{"a SIMD-group call inside another's arguments (" + line_of(x) + ")"};
        if (x.is_punct("++") || x.is_punct("--") || x.is_punct("=") || x.is_punct("+=") || x.is_punct("-=") ||
            x.is_punct("*=") || x.is_punct("/="))
          throw NotRegions{"a SIMD-group call whose arguments assign (" + line_of(x) + ")"};
      }
    }
  }

  void mark(std::size_t b, std::size_t e, int region) {
    for (std::size_t k = b; k < e; ++k) {
      const Token& x = t_[k];
      if (x.kind == TokenKind::Identifier && !is_member_access(t_, k) && !(k > 0 && t_[k - 1].is_punct("::")))
        uses_.push_back({k, region});
    }
  }

  void declare(std::size_t b, std::size_t e, int region, bool group_level, std::size_t for_end = 0) {
    const std::vector<Declarator> all = declarators(t_, b, e);
    if (all.empty()) {
      // Threadgroup storage must be declared where the group's code runs once.
      for (std::size_t k = b; k < e; ++k)
        if (!group_level && t_[k].is_ident("threadgroup") && declares_threadgroup_storage(t_, k))
          throw NotRegions{"threadgroup memory declared inside a block (" + line_of(t_[k]) + ")"};
      return;
    }
    const Declaration& first = all.front().decl;
    if (!group_level && first.threadgroup)
      throw NotRegions{"threadgroup memory declared inside a block (" + line_of(t_[first.name]) + ")"};
    for (const Declarator& d : all)
      decls_[t_[d.decl.name].text].push_back({d.decl, region, !group_level, e, d.comma, d.pointer, first.name,
                                              for_end ? for_end : block_end_[d.decl.name]});
  }

  void nested_for_init(const BodyStmt& s) {
    std::size_t s1 = 0, s2 = 0;
    for_clauses(t_, s, s1, s2);
    declare(s.open + 1, s1, -1, false, s.end);
  }

  // Declarations inside a statement that runs in one region (they shadow).
  void collect_nested(const BodyStmt& s) {
    for (const BodyStmt& c : s.kids) {
      if (c.kind == Kind::Simple) declare(c.begin, c.end - 1, -1, false);
      if (c.kind == Kind::For) nested_for_init(c);
      collect_nested(c);
    }
  }

  const std::vector<Token>& t_;
  const UniformNames& names_;
  const std::set<std::string>& changed_params_;
  const std::set<std::size_t>& uniform_names_;  // the uniform declarations' names (tokens)
  std::vector<Use> uses_;
  std::map<std::string, std::vector<Decl>> decls_;
  std::vector<std::size_t> block_end_;
  std::set<std::size_t> uniform_, uniform_ifs_, branching_ifs_;
  int cur_ = 0;
};

// ---- the rewrite ----------------------------------------------------------------

// The value of Metal attribute `name` for thread alloy_tid of the group, at
// alloy_lid in it.
std::string region_attribute(const std::string& name) {
  // The SIMD width is the runtime's constant: the compiler folds what it
  // computes (`ceildiv(C, threads_per_simdgroup)`) rather than dividing.
  if (name == "threads_per_simdgroup") return "::metal::uint(::alloy_msl::kSimdWidth)";
  return per_thread_attribute(name) ? "::alloy_msl::cpu::region_" + name + "(alloy_g, alloy_tid, alloy_lid)"
                                    : "alloy_g.base." + name;
}

std::string text(const std::vector<Token>& t, const Out& out, std::size_t b, std::size_t e) {
  std::string s;
  for (std::size_t k = b; k < e; ++k) {
    if (!s.empty()) s += ' ';
    s += out[k] ? *out[k] : t[k].text;
  }
  return s;
}

class Splitter {
 public:
  Splitter(const RegionsPlan& plan, const std::vector<Token>& t, Out& out) : plan_(plan), t_(t), out_(out) {
    // Each thread's ids (and its bounds check, which names it) in each region.
    if (plan.bounds_check)
      ids_ += "::alloy_msl::BoundsCheck alloy_bc = alloy_bc_group; "
              "alloy_bc.thread = ::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid); ";
    for (const std::string& v : plan.thread_values) ids_ += v;
    // A rows kernel's row and column: in a region, what region_for_rows
    // passes; in a condition's lambda, divided for.
    if (!plan.rows_divisor.empty()) {
      const std::string names = "[[maybe_unused]] const auto alloy_row = alloy_rc.row; "
                                "[[maybe_unused]] const auto alloy_col = alloy_rc.col; ";
      region_ids_ = ids_ + names;
      ids_ += "[[maybe_unused]] const auto alloy_rc = ::alloy_msl::cpu::region_row_column<" + plan.rows_index_type +
              ">(alloy_g, alloy_tid, alloy_lid, " + plan.rows_divisor + "); " + names;
    } else {
      region_ids_ = ids_;
    }
  }

  void run() {
    std::string prologue;
    const std::string types = deduced_types();
    // A rows kernel's divisions become its row and column (where nothing
    // else rewrote their tokens: the others still divide).
    for (const auto* uses : {&plan_.row_quotients, &plan_.row_remainders})
      for (std::size_t k : *uses)
        if (!out_[k] && !out_[k + 1] && !out_[k + 2]) {
          out_[k] = uses == &plan_.row_quotients ? "alloy_row" : "alloy_col";
          out_[k + 1] = out_[k + 2] = "";
        }
    for (const HoistedVariable& h : plan_.hoisted) {
      const std::string name = t_[h.name].text, at = "alloy_fv." + h.storage + "[alloy_tid]";
      std::string type;
      // The array is assigned: a `const` of the value goes, one of what a
      // pointer points to stays.
      for (std::size_t k = h.type_begin; k < h.type_end; ++k) {
        bool pointee = false;
        for (std::size_t j = k + 1; j < h.type_end; ++j) pointee = pointee || t_[j].is_punct("*");
        if (!t_[k].is_ident("const") || pointee) type += (type.empty() ? "" : " ") + cur(k);
      }
      if (h.deduced) type = "::alloy_msl::cpu::region_value_t<decltype(alloy_types_t::m_" + h.storage + ")>";
      if (h.constructed) out_[h.end] = "= " + type + " " + cur(h.end);  // `T x(a)`: x = T(a)
      std::string dims = text(t_, out_, h.name + 1, h.end);
      prologue += type + " " + h.storage + "[::alloy_msl::cpu::kRegionMaxThreads]" + dims + "; ";
      // Each region works on its thread's values in locals of the same
      // names (registers, free of aliasing), loaded at its start and stored
      // at its end; an array is reached in place.
      const bool array = h.end > h.name + 1;
      vars_[h.storage] = {array ? "auto& " + name + " = " + at + "; " : type + " " + name + " = " + at + "; ",
                          array ? "" : at + " = " + name + "; "};
    }
    // A parameter the body changes: each thread's copy, from the parameter.
    std::string copies, param_types;  // (a member may not name the parameter it is named after: a type first)
    for (const std::string& p : plan_.copied_params) {
      param_types += "typedef __typeof__(" + p + ") alloy_param_t_" + p + "; ";
      prologue += "alloy_param_t_" + p + " " + p + "[::alloy_msl::cpu::kRegionMaxThreads]; ";
      copies += "for (unsigned alloy_t = 0; alloy_t < alloy_g.count; ++alloy_t) alloy_fv." + p + "[alloy_t] = " + p + "; ";
      vars_[p] = {"auto " + p + " = alloy_fv." + p + "[alloy_tid]; ", "alloy_fv." + p + "[alloy_tid] = " + p + "; "};
      copied_.insert(p);
    }
    // One block for them all, held by the group's state (no thread_local in
    // the loops: each access would look the thread's storage up).
    if (!prologue.empty())
      prologue = param_types + types + "struct alloy_frame_t { " + prologue +
                 "}; alloy_frame_t* alloy_fvp = static_cast<alloy_frame_t*>(::alloy_msl::cpu::region_frame(alloy_g, "
                 "sizeof(alloy_frame_t))); if (!alloy_fvp) return; alloy_frame_t& __restrict__ alloy_fv = *alloy_fvp; " +
                 copies;
    // The uniform declarations, evaluated once for the group before it
    // (after its attributes, which they may read), their statements gone
    // from their places.
    // (Each under a `#line` of its own: a compiler's message about it names
    // the user's line.)
    std::string uniform;
    for (const BodyStmt& s : plan_.body) {
      if (!plan_.uniform_declarations.count(s.begin)) continue;
      uniform += Writer::line_marker(t_[s.begin].line) + text(t_, out_, s.begin, s.end);
      for (std::size_t k = s.begin; k < s.end; ++k) out_[k] = "";
    }
    if (!uniform.empty()) {
      std::string group;
      for (const std::string& v : plan_.group_values) group += v;
      uniform = group + uniform + Writer::line_marker_back();
    }
    if (!prologue.empty() || !uniform.empty()) prologue = moved_constants() + uniform + prologue;
    // A hoisted declaration becomes an assignment to the region's local (or
    // nothing); an array's initialiser fills a temporary copied into it.
    for (const HoistedVariable& h : plan_.hoisted) {
      if (h.array_initialised) {
        const std::string name = t_[h.name].text, temp = "alloy_init_" + name;
        std::size_t end = h.end;
        for (int depth = 0; end < t_.size() && !(depth == 0 && t_[end].is_punct(";")); ++end) {
          if (opens_bracket(t_[end])) ++depth;
          if (closes_bracket(t_[end])) --depth;
        }
        out_[h.type_begin] = "{ " + cur(h.type_begin);
        out_[h.name] = temp;
        out_[end] = "; __builtin_memcpy(&" + name + ", &" + temp + ", sizeof(" + temp + ")); }";
        continue;
      }
      if (h.type_end == h.name)  // (a later declarator keeps the `,` before it)
        for (std::size_t k = h.type_begin; k < h.name; ++k) out_[k] = "";
      if (h.separator) out_[h.separator] = "";
      if (!h.initialised)
        for (std::size_t k = h.name; k < h.end; ++k) out_[k] = "";
      else
        for (std::size_t k = h.name + 1; k < h.end; ++k) out_[k] = "";
    }
    // A program's entry: the group replaces its attribute parameters.
    for (auto [b, e] : plan_.dropped)
      for (std::size_t k = b; k < e; ++k) out_[k] = "";
    if (plan_.params_close)
      out_[plan_.params_close] = std::string(plan_.other_params ? ", " : "") +
                                 "::alloy_msl::cpu::GroupThreads& alloy_g" + cur(plan_.params_close);
    // The frame goes at plan_.frame_at, after the body's leading constants
    // and threadgroup storage (an array's extent may name such a constant:
    // `float v[R]`); at the end when every statement is one of those.
    prologue_ = prologue;
    list(plan_.body);
    pending_ += prologue_;
    std::string tail = pending_ + (open_ ? close_text("") : "");
    if (plan_.end == plan_.begin || tail.empty()) return;
    // After the body's last line, which may be a preprocessor line (`#endif`).
    const std::size_t last = plan_.end - 1;
    out_[last] = cur(last) + (t_[last].kind == TokenKind::Directive ? "\n" : " ") + tail;
  }

 private:
  std::string cur(std::size_t k) const { return out_[k] ? *out_[k] : t_[k].text; }

  // The types of the values declared `auto` that live across regions
  // (HoistedVariable::deduced): a lambda, never called, repeats the
  // declarations they depend on after the thread's attributes, as a region
  // would, and a struct of its members gives each one's type as
  // alloy_types_t::m_<name>. (Read before the regions rewrite the tokens.)
  std::string deduced_types() const {
    std::string decls, members;
    for (const TypeDeclaration& d : plan_.type_declarations) {
      if (d.uses_auto) {
        decls += text(t_, out_, d.type_begin, d.end) + "; ";
        continue;
      }
      decls += text(t_, out_, d.type_begin, d.type_end) + " " + text(t_, out_, d.name, d.after) + " {}; ";
    }
    for (const HoistedVariable& h : plan_.hoisted)
      if (h.deduced) members += "decltype(" + t_[h.name].text + ") m_" + h.storage + "; ";
    if (members.empty()) return "";
    return "[[maybe_unused]] auto alloy_types_fn = [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) { " + ids_ +
           decls + "struct alloy_types_r { " + members +
           "}; return static_cast<alloy_types_r*>(nullptr); }; typedef ::alloy_msl::cpu::region_pointee_t<decltype("
           "alloy_types_fn(0ul, ::metal::uint3{}))> alloy_types_t; ";
  }

  // RegionsPlan::moved_constants' text, taken from their places.
  std::string moved_constants() {
    std::string moved;
    for (auto [b, e] : plan_.moved_constants) {
      moved += text(t_, out_, b, e) + " ";
      for (std::size_t k = b; k < e; ++k) out_[k] = "";
    }
    return moved;
  }

  // The hoisted names tokens [b, e) use; those the tokens may change also
  // go to region_written_ (a region stores back only those).
  // (Keys: the frame's array a use refers to, RegionsPlan::hoisted_uses;
  // a copied parameter's name.)
  void uses(std::size_t b, std::size_t e, std::set<std::string>& names) {
    for (std::size_t k = b; k < e; ++k) {
      if (t_[k].kind != TokenKind::Identifier || is_member_access(t_, k) || (k > 0 && t_[k - 1].is_punct("::")))
        continue;
      std::string key;
      if (auto at = plan_.hoisted_uses.find(k); at != plan_.hoisted_uses.end()) key = at->second;
      else if (copied_.count(t_[k].text)) key = t_[k].text;
      else continue;
      names.insert(key);
      if (may_change(k, b)) region_written_.insert(key);
    }
  }
  // Whether the use of a hoisted name at token k (its statement starting at
  // or after `first`) may change its value: assigned, incremented, its
  // address or a member or element taken, or an argument of a call (which
  // may take it by reference; a functional cast to a scalar or vector type
  // does not). Conservative: any doubt counts as a change. (A macro body
  // that names a value living across regions keeps the kernel off regions:
  // plan_regions.)
  bool may_change(std::size_t k, std::size_t first) const {
    static const std::set<std::string> changes = {"=",  "+=", "-=", "*=", "/=",  "%=",  "&=", "|=",
                                                  "^=", "<<=", ">>=", "++", "--", ".", "->", "["};
    if (k + 1 < t_.size() && t_[k + 1].kind == TokenKind::Punct && changes.count(t_[k + 1].text)) return true;
    if (k > 0 && (t_[k - 1].is_punct("++") || t_[k - 1].is_punct("--") || t_[k - 1].is_punct("&"))) return true;
    int depth = 0;
    for (std::size_t j = k; j-- > first;) {
      if (t_[j].is_punct(")") || t_[j].is_punct("]")) ++depth;
      if (!(t_[j].is_punct("(") || t_[j].is_punct("["))) continue;
      if (depth > 0) {
        --depth;
        continue;
      }
      if (t_[j].is_punct("[")) continue;  // an index: read
      // An enclosing `(`: a call unless what precedes it is a keyword, an
      // operator or a type name (a cast).
      if (j == 0) return false;
      const Token& before = t_[j - 1];
      if (before.is_punct(">") || before.is_punct(")") || before.is_punct("]")) return true;
      if (before.kind != TokenKind::Identifier) continue;
      static const std::set<std::string> not_calls = {"if", "while", "for", "switch", "return", "sizeof"};
      if (not_calls.count(before.text) || is_value_type_name(before.text)) continue;
      return true;
    }
    return false;
  }
  static bool is_value_type_name(const std::string& name) {
    static const std::set<std::string> scalars = {"bool", "char", "uchar", "short", "ushort", "int", "uint",
                                                  "long", "ulong", "half", "float", "bfloat", "double", "size_t"};
    if (scalars.count(name)) return true;
    const std::string base = name.size() > 1 ? name.substr(0, name.size() - 1) : "";
    return scalars.count(base) && name.back() >= '2' && name.back() <= '4';
  }
  std::string loads(const std::set<std::string>& names) const {
    std::string s;
    for (const std::string& n : names) s += vars_.at(n).first;
    return s;
  }
  std::string stores(const std::set<std::string>& names) const {
    std::string s;
    for (const std::string& n : names) s += vars_.at(n).second;
    return s;
  }
  // The loads are known when the region closes: a marker stands for them.
  std::string marker() const { return "\x01" + std::to_string(label_) + "\x01"; }
  std::string open_text() {
    label_ = ++labels_;
    region_names_.clear();
    region_written_.clear();
    // The region is a lambda that region_for inlines into its loops over the
    // group's threads; a `return` in it jumps to its end.
    if (!plan_.rows_divisor.empty())
      return "::alloy_msl::cpu::region_for_rows<" + plan_.rows_index_type + ">(alloy_g, " + plan_.rows_divisor +
             ", [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid, auto alloy_rc) __attribute__((always_inline)) "
             "{ " + region_ids_ + marker() + "{ ";
    return "::alloy_msl::cpu::region_for(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) "
           "__attribute__((always_inline)) { " + region_ids_ + marker() + "{ ";
  }
  std::string close_text(const std::string& deposits) {
    const std::string m = marker(), in = loads(region_names_);
    bool placed = false;
    if (std::size_t at = pending_.find(m); at != std::string::npos) {
      pending_.replace(at, m.size(), in);
      placed = true;
    }
    for (std::size_t k = plan_.begin; k < plan_.end && !placed; ++k)
      if (out_[k])
        if (std::size_t at = out_[k]->find(m); at != std::string::npos) {
          out_[k]->replace(at, m.size(), in);
          placed = true;
        }
    std::set<std::string> written;
    for (const std::string& n : region_names_)
      if (region_written_.count(n)) written.insert(n);
    return " } " + deposits + "alloy_next_" + std::to_string(label_) + ": ; " + stores(written) + "}); ";
  }
  void open() {
    if (!open_) pending_ += open_text();
    open_ = true;
  }
  void close(const std::string& deposits = "") {
    if (open_) pending_ += close_text(deposits);
    open_ = false;
  }
  // Text waiting for the next token that can carry it (not a directive).
  void flush(std::size_t k) {
    if (pending_.empty()) return;
    out_[k] = pending_ + cur(k);
    pending_.clear();
  }
  void returns(std::size_t b, std::size_t e) {
    for (std::size_t k = b; k + 1 < e; ++k)
      if (t_[k].is_ident("return") && t_[k + 1].is_punct(";")) {
        out_[k] = "{ ::alloy_msl::cpu::region_return(alloy_g, alloy_tid); goto alloy_next_" + std::to_string(label_) + "; }";
        out_[k + 1] = "";
      }
  }

  void list(const std::vector<BodyStmt>& stmts) {
    for (const BodyStmt& s : stmts) {
      if (s.begin == plan_.frame_at) {
        pending_ += prologue_;
        prologue_.clear();
      }
      if (plan_.uniform_declarations.count(s.begin)) continue;  // (moved to the prologue)
      if (s.kind == Kind::Directive) {
        // Stays where it is. A condition's lines stay inside one region
        // (Planner::check), opened before its `#if` (a line of its own).
        if (is_conditional_directive(t_[s.begin].text)) {
          open();
          out_[s.begin] = pending_ + "\n" + cur(s.begin);
          pending_.clear();
        }
        continue;
      }
      if (!has_sync(t_, s.begin, s.end)) {
        if (group_declaration(t_, s)) {
          close();  // shared by the group: declared once, at its scope
        } else {
          open();
          returns(s.begin, s.end);
          uses(s.begin, s.end, region_names_);
        }
        flush(s.begin);
        continue;
      }
      if (s.kind == Kind::Simple && is_barrier_statement(t_, s)) {
        close();
        for (std::size_t k = s.begin; k < s.end; ++k) out_[k] = "";
        continue;
      }
      if (s.kind == Kind::Simple) {
        simd_statement(s);
        continue;
      }
      if (s.kind == Kind::Block) {
        close();
        flush(s.begin);
        list(s.kids);
        close();
        out_[s.end - 1] = pending_ + cur(s.end - 1);
        pending_.clear();
        continue;
      }
      loop(s);
    }
  }

  void simd_statement(const BodyStmt& s) {
    auto calls = simd_calls(t_, s);
    // Consecutive statements take turns with the slots: the loop that reads
    // this one's deposits the next one's values.
    const unsigned first = (statements_++ % 2) * kCallsPerStatement;
    std::string deposits;
    open();
    for (std::size_t j = 0; j < calls.size(); ++j) {
      deposits += "::alloy_msl::cpu::region_deposit(alloy_g, " + std::to_string(first + j) + ", alloy_tid, " +
                  text(t_, out_, calls[j].first, calls[j].second + 1) + "); ";
      uses(calls[j].first, calls[j].second + 1, region_names_);
    }
    close(deposits);
    pending_ += "::alloy_msl::cpu::region_exchange(alloy_g, " + std::to_string(first) + ", " +
                std::to_string(calls.size()) + "); ";
    open();
    for (std::size_t j = 0; j < calls.size(); ++j) {
      auto [call, c] = calls[j];
      out_[call] = "::alloy_msl::cpu::region_result(alloy_g, " + std::to_string(first + j) + ", alloy_tid, " + cur(call);
      out_[c] = cur(c) + ")";
    }
    uses(s.begin, s.end, region_names_);
    flush(s.begin);
  }

  // A branch's (or a loop body's) regions are written; returns the text
  // that ends its last region.
  std::string branch_regions(const BodyStmt& body) {
    if (body.kind == Kind::Block) {
      list(body.kids);
    } else {
      std::vector<BodyStmt> one(1, body);
      list(one);
    }
    close();
    std::string before = pending_;
    pending_.clear();
    return before;
  }
  // The loop's header gives way to `head` and its body's regions are
  // written; returns the text that ends the body's last region.
  std::string loop_body_regions(const BodyStmt& s, const std::string& head) {
    out_[s.begin] = head;
    for (std::size_t k = s.begin + 1; k <= s.close; ++k) out_[k] = "";
    return branch_regions(s.kids[0]);
  }
  // The branch's last token then carries `before` and `tail`.
  void end_branch(const BodyStmt& body, const std::string& before, const std::string& tail) {
    const std::size_t last = body.end - 1;
    out_[last] = body.kind == Kind::Block ? before + cur(last) + " " + tail : cur(last) + " " + before + tail;
  }
  void end_loop(const BodyStmt& s, const std::string& before, const std::string& tail) {
    end_branch(s.kids[0], before, tail);
  }

  // A branch every thread takes the same way (plan.uniform_ifs): `{ if
  // (cond) {`, the first branch's regions, `} else {`, the other's, `} }`.
  void uniform_if(const BodyStmt& s) {
    close();
    std::string group;  // the group's own attributes, which the condition may read
    for (const std::string& v : plan_.group_values) group += v;
    out_[s.begin] = pending_ + "{ " + group + "if (" + text(t_, out_, s.open + 1, s.close) + ") { ";
    pending_.clear();
    for (std::size_t k = s.begin + 1; k <= s.close; ++k) out_[k] = "";
    const std::string then_end = branch_regions(s.kids[0]);
    if (s.kids.size() == 1) {
      end_branch(s.kids[0], then_end, "} } ");
      return;
    }
    // (Before the `else` branch's first region opens, which its first token carries.)
    end_branch(s.kids[0], then_end, "} else { ");
    for (std::size_t k = s.kids[0].end; k < s.kids[1].begin; ++k) out_[k] = "";  // `else`
    end_branch(s.kids[1], branch_regions(s.kids[1]), "} } ");
  }

  // A uniform loop (plan.uniform_loops): `{ init; for (; cond; inc) {`, its
  // body's regions, then `} }`.
  void uniform_loop(const BodyStmt& s) {
    std::size_t s1 = 0, s2 = 0;
    for_clauses(t_, s, s1, s2);
    std::string group;  // the group's own attributes, which the header may read
    for (const std::string& v : plan_.group_values) group += v;
    const std::string head = pending_ + "{ " + group + text(t_, out_, s.open + 1, s1) + "; for (; " +
                             text(t_, out_, s1 + 1, s2) + "; " + text(t_, out_, s2 + 1, s.close) + ") { ";
    pending_.clear();
    end_loop(s, loop_body_regions(s, head), "} } ");
  }

  // A branch threads may take differently (plan.branching_ifs):
  // `if (region_branch(cond)) {`, the first branch's regions, `} if
  // (region_else()) {`, the other's, `} region_rejoin();`.
  void branching_if(const BodyStmt& s) {
    close();
    const std::string depth = std::to_string(depth_++) + "u";
    std::set<std::string> in_cond;
    uses(s.open + 1, s.close, in_cond);
    out_[s.begin] = pending_ +
                    "if (::alloy_msl::cpu::region_branch(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 "
                    "alloy_lid) -> bool { " +
                    ids_ + loads(in_cond) + "return bool(" + text(t_, out_, s.open + 1, s.close) + "); }, " + depth +
                    ")) { ";
    pending_.clear();
    for (std::size_t k = s.begin + 1; k <= s.close; ++k) out_[k] = "";
    const std::string rejoin = "} ::alloy_msl::cpu::region_rejoin(alloy_g, " + depth + "); ";
    const std::string then_end = branch_regions(s.kids[0]);
    if (s.kids.size() == 1) {
      end_branch(s.kids[0], then_end, rejoin);
    } else {
      end_branch(s.kids[0], then_end, "} if (::alloy_msl::cpu::region_else(alloy_g, " + depth + ")) { ");
      for (std::size_t k = s.kids[0].end; k < s.kids[1].begin; ++k) out_[k] = "";  // `else`
      end_branch(s.kids[1], branch_regions(s.kids[1]), rejoin);
    }
    --depth_;
  }

  void loop(const BodyStmt& s) {
    if (plan_.uniform_ifs.count(s.begin)) {
      uniform_if(s);
      return;
    }
    if (plan_.branching_ifs.count(s.begin)) {
      branching_if(s);
      return;
    }
    close();
    if (plan_.uniform_loops.count(s.begin)) {
      uniform_loop(s);
      return;
    }
    std::string init, cond, inc;
    std::size_t s1 = 0, s2 = 0;
    if (s.kind == Kind::For) {
      for_clauses(t_, s, s1, s2);
      init = text(t_, out_, s.open + 1, s1);
      cond = text(t_, out_, s1 + 1, s2);
      inc = text(t_, out_, s2 + 1, s.close);
    } else {
      cond = text(t_, out_, s.open + 1, s.close);
    }
    if (!init.empty()) {
      open();
      uses(s.open + 1, s1, region_names_);
      pending_ += init + "; ";
      close();
    }
    const unsigned depth = depth_++;
    std::set<std::string> in_cond;
    if (s.kind == Kind::For) uses(s1 + 1, s2, in_cond);
    else uses(s.open + 1, s.close, in_cond);
    pending_ += "while (::alloy_msl::cpu::region_loop(alloy_g, [&](unsigned long alloy_tid, ::metal::uint3 alloy_lid) -> bool { " + ids_ +
                loads(in_cond) + "return bool(" + (cond.empty() ? std::string("true") : cond) + "); }, " +
                std::to_string(depth) + "u)) { ";
    const std::string head = pending_;
    pending_.clear();
    const std::string before = loop_body_regions(s, head);
    if (!inc.empty()) {
      open();
      uses(s2 + 1, s.close, region_names_);
      pending_ += inc + "; ";
      close();
    }
    pending_ += "} ";
    --depth_;
    end_loop(s, before, pending_);
    pending_.clear();
  }

  const RegionsPlan& plan_;
  const std::vector<Token>& t_;
  Out& out_;
  std::string ids_, pending_;
  std::string region_ids_;  // ids_ for region_for's lambdas (a rows kernel's row and column from the loop)
  std::map<std::string, std::pair<std::string, std::string>> vars_;  // by key (uses()): (load, store) text
  std::set<std::string> copied_;                                      // RegionsPlan::copied_params
  std::set<std::string> region_names_;                                // the open region's hoisted names
  std::set<std::string> region_written_;                              // those it may change
  unsigned depth_ = 0;       // group-level loops entered
  unsigned statements_ = 0;  // SIMD-group statements so far
  bool open_ = false;
  std::string prologue_;  // the per-thread frame, until the first statement that needs it
  int label_ = 0, labels_ = 0;
};

}  // namespace

namespace {

// A program's entry kernel: its body's tokens, its attribute parameters
// (dropped: the group passes its ids) and the program's other kernels
// (dropped: they are never called, and their synchronising calls would need
// the fiber runtime this translation does not use).
void plan_program(const KernelSpec& spec, const std::vector<Token>& t, RegionsPlan& plan,
                  std::set<std::string>& param_names) {
  const ProgramInfo info = parse_program(spec.source, spec.header);
  const ProgramKernel* entry = nullptr;
  for (const ProgramKernel& k : info.kernels)
    if (k.name == spec.program_entry) entry = &k;
  if (!entry) throw NotRegions{"no entry"};
  auto index_at = [&](std::size_t offset) {
    for (std::size_t k = 0; k < t.size(); ++k)
      if (t[k].begin == offset) return k;
    throw NotRegions{"a kernel body not on a token"};
  };
  // A kernel's declaration: from `template` (if any) or `kernel` to its body's end.
  auto declaration_of = [&](const ProgramKernel& k) {
    std::size_t open = index_at(k.body_begin), close = index_at(k.body_end - 1);
    std::size_t start = open;
    while (start > 0 && !t[start].is_ident("kernel")) --start;
    if (start > 0 && t[start - 1].is_punct(">")) {
      int depth = 0;
      std::size_t j = start - 1;
      for (;; --j) {
        if (t[j].is_punct(">")) ++depth;
        if (t[j].is_punct("<") && --depth == 0) break;
        if (j == 0) throw NotRegions{"a template kernel of another form"};
      }
      if (j > 0 && t[j - 1].is_ident("template")) start = j - 1;
    }
    return std::array<std::size_t, 3>{start, open, close};
  };
  auto [start, open, close] = declaration_of(*entry);
  for (const ProgramParam& q : entry->params)
    if (q.role != ProgramParam::Role::Attribute) param_names.insert(q.name);
  plan.begin = open + 1;
  plan.end = close;
  for (const ProgramKernel& k : info.kernels) {
    if (k.body_begin == entry->body_begin) continue;
    auto [s, o, c] = declaration_of(k);
    bool seen = false;
    for (auto [b, e] : plan.dropped) seen = seen || b == s;
    if (!seen) plan.dropped.emplace_back(s, c + 1);
  }
  // The parameter list: `(` ... `)` right before the body.
  if (open == 0 || !t[open - 1].is_punct(")")) throw NotRegions{"an entry whose parameters do not end at its body"};
  const std::size_t pclose = open - 1;
  int depth = 0;
  std::size_t popen = pclose;
  for (;; --popen) {
    if (t[popen].is_punct(")")) ++depth;
    if (t[popen].is_punct("(") && --depth == 0) break;
    if (popen <= start) throw NotRegions{"an entry's parameters"};
  }
  // Each parameter: the tokens between commas at depth 0. Attribute ones go,
  // and each becomes a value each region declares.
  std::vector<std::pair<std::size_t, std::size_t>> params;
  std::size_t from = popen + 1;
  depth = 0;
  for (std::size_t k = popen + 1; k <= pclose; ++k) {
    if (k < pclose && opens_bracket(t[k])) ++depth;
    if (k < pclose && closes_bracket(t[k])) --depth;
    if (k == pclose || (depth == 0 && t[k].is_punct(","))) {
      if (k > from) params.emplace_back(from, k);
      from = k + 1;
    }
  }
  std::size_t attribute_index = 0;
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto [b, e] = params[i];
    bool attribute = false;
    for (std::size_t k = b; k < e; ++k)
      if (t[k].kind == TokenKind::Identifier && find_attribute(t[k].text) && k > b && t[k - 1].is_punct("[[")) attribute = true;
    if (!attribute) {
      kept.push_back(i);
      continue;
    }
    // The ProgramParam of this attribute, in order.
    const ProgramParam* p = nullptr;
    std::size_t seen = 0;
    for (const ProgramParam& q : entry->params)
      if (q.role == ProgramParam::Role::Attribute && seen++ == attribute_index) p = &q;
    ++attribute_index;
    if (!p || p->name.empty()) throw NotRegions{"an unnamed attribute parameter"};
    const std::string value = "[[maybe_unused]] const " + p->type + " " + p->name + " = ::alloy_msl::attribute_as<" +
                              p->type + ">(" + region_attribute(p->attribute) + "); ";
    plan.thread_values.push_back(value);
    if (per_thread_attribute(p->attribute)) plan.thread_names.insert(p->name);
    else plan.group_values.push_back(value);
  }
  // Drop each attribute parameter with the comma that joins it to the others.
  for (std::size_t i = 0; i < params.size(); ++i) {
    bool keep = false;
    for (std::size_t k : kept) keep = keep || k == i;
    if (keep) continue;
    auto [b, e] = params[i];
    // The comma before it, or (for the first) the one after it.
    if (b > popen + 1) plan.dropped.emplace_back(b - 1, e);
    else if (e < pclose) plan.dropped.emplace_back(b, e + 1);
    else plan.dropped.emplace_back(b, e);
  }
  plan.params_close = pclose;
  plan.other_params = !kept.empty();
}

}  // namespace

std::optional<RegionsPlan> plan_regions(const KernelSpec& spec, const LexedKernel& lexed,
                                        const std::vector<std::string>& attributes, std::string& why_not) {
  const std::vector<Token>& toks = lexed.source.tokens;
  try {
    // Split, the kernel's locals are the group's; a helper's are not.
    auto storage_in = [](const LexedText& text, std::size_t b, std::size_t e) {
      for (std::size_t k = 0; k < text.code.size(); ++k)
        if ((text.code[k].begin < b || text.code[k].begin >= e) && text.code[k].is_ident("threadgroup") &&
            declares_threadgroup_storage(text.code, k))
          return true;
      return false;
    };
    RegionsPlan shape;
    std::set<std::string> param_names;  // the kernel's buffers and values
    if (spec.program_entry.empty()) {
      for (const auto* list : {&spec.inputs, &spec.outputs})
        for (const ParamSpec& p : *list) param_names.insert(p.name);
      shape.begin = 0;
      shape.end = toks.size();
      for (const std::string& a : attributes) {
        const std::string value = "[[maybe_unused]] const auto " + a + " = " + region_attribute(a) + "; ";
        shape.thread_values.push_back(value);
        if (per_thread_attribute(a)) shape.thread_names.insert(a);
        else shape.group_values.push_back(value);
      }
    } else {
      plan_program(spec, toks, shape, param_names);
    }
    bool helper_storage = storage_in(lexed.header, 0, 0);
    for (const IncludedFile& f : lexed.includes) helper_storage = helper_storage || storage_in(f.lexed, 0, 0);
    if (!spec.program_entry.empty() && shape.end > shape.begin)
      helper_storage = helper_storage || storage_in(lexed.source, toks[shape.begin].begin, toks[shape.end - 1].end);
    if (helper_storage) throw NotRegions{"a helper function declares threadgroup memory"};
    for (std::size_t k = shape.begin; k < shape.end; ++k) {
      const Token& t = toks[k];
      if (t.is_ident("goto") || t.is_ident("co_return") || t.is_ident("co_await") || t.text.rfind("alloy_", 0) == 0)
        throw NotRegions{"the body uses `" + t.text + "`"};
    }
    // The group runs the body once, so its parameters are the group's: a
    // thread that moves a pointer (`out += row * V;`) works on its own copy
    // (RegionsPlan::copied_params).
    std::set<std::string> changed;
    for (std::size_t k = shape.begin; k < shape.end; ++k)
      if (toks[k].kind == TokenKind::Identifier && param_names.count(toks[k].text) && !is_member_access(toks, k) &&
          !(k > 0 && toks[k - 1].is_punct("::")) && changes_name_at(toks, k, /*or_address=*/false))
        changed.insert(toks[k].text);
    std::vector<BodyStmt> stmts = parse_statements(toks, shape.begin, shape.end);
    // What a loop's header may read and still be the group's (cpu_uniform_loops.h).
    UniformNames names = body_names(toks, stmts);
    for (const std::string& p : changed) {
      if (names.body_locals.count(p)) throw NotRegions{"the body changes its parameter '" + p + "' and declares that name"};
      names.body_locals.insert(p);  // each thread's own value
    }
    names.thread_values = shape.thread_names;
    names.macros = macros_naming_anything(lexed);
    names.indexing = !spec.bounds_check;
    // Declarations every thread of the group evaluates alike: once for the
    // group (their elements read only from buffers no thread writes).
    std::set<std::string> written;
    for (const ParamSpec& p : spec.outputs) written.insert(p.name);
    const UniformDeclarations uniform = uniform_declarations(toks, stmts, shape.begin, shape.end, names, written,
                                                             spec.program_entry.empty() && !spec.bounds_check);
    Planner planner(toks, names, changed, uniform.names);
    planner.check(stmts, false);
    planner.number(stmts);
    RegionsPlan plan = planner.finish(std::move(stmts));
    plan.begin = shape.begin;
    plan.end = shape.end;
    plan.thread_values = std::move(shape.thread_values);
    plan.group_values = std::move(shape.group_values);
    plan.dropped = std::move(shape.dropped);
    plan.params_close = shape.params_close;
    plan.other_params = shape.other_params;
    plan.bounds_check = spec.bounds_check;
    plan.copied_params.assign(changed.begin(), changed.end());
    plan.uniform_declarations = uniform.statements;
    if (spec.program_entry.empty()) {
      std::set<std::string> constants;  // the integer template constants
      for (const TemplateArg& a : spec.template_args)
        if (a.kind == TemplateArg::Int) constants.insert(a.name);
      if (auto rows = thread_rows(toks, plan.body, shape.begin, shape.end, names, uniform, constants)) {
        plan.rows_index_type = rows->index_type;
        plan.rows_divisor = rows->divisor;
        plan.row_quotients = std::move(rows->quotients);
        plan.row_remainders = std::move(rows->remainders);
      }
    }
    // A macro that names a value living across regions would use it where
    // the region's own text does not (its load and store would be missed).
    std::set<std::string> hoisted;
    for (const HoistedVariable& h : plan.hoisted) hoisted.insert(toks[h.name].text);
    hoisted.insert(changed.begin(), changed.end());
    // (The code has each #define's body lexed in place of the directive.)
    for (const LexedText* text : {&lexed.source, &lexed.header}) {
      std::vector<std::pair<std::size_t, std::size_t>> directives;
      for (const Token& d : text->tokens)
        if (d.kind == TokenKind::Directive) directives.emplace_back(d.begin, d.end);
      for (const Token& m : text->code) {
        if (m.kind != TokenKind::Identifier || !hoisted.count(m.text)) continue;
        for (auto [b, e] : directives)
          if (m.begin >= b && m.begin < e)
            throw NotRegions{"a macro names `" + m.text + "`, a value that lives across barriers"};
      }
    }
    return plan;
  } catch (const NotRegions& e) {
    why_not = e.why;
    return std::nullopt;
  }
}

void split_regions(const RegionsPlan& plan, const std::vector<Token>& toks, Out& out) {
  Splitter(plan, toks, out).run();
}

}  // namespace alloy::msl
