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

// ---- the plan -----------------------------------------------------------------

class Planner {
 public:
  // The body is tokens [body_begin, body_end) of t.
  Planner(const std::vector<Token>& t, std::size_t body_begin, std::size_t body_end, const UniformNames& names,
          const std::set<std::string>& changed_params, const std::set<std::size_t>& uniform_names)
      : t_(t), body_begin_(body_begin), body_end_(body_end), names_(names), changed_params_(changed_params),
        uniform_names_(uniform_names), batch_body_(simd_batch_body(t, body_begin, body_end)),
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
    for (std::size_t i = 0; i < list.size(); ++i) {
      const BodyStmt& s = list[i];
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
        // Deposits end the region before; the statements start the next
        // (those sharing one exchange: simd_batch_length).
        const std::size_t n = simd_batch_length(t_, list, i, batch_body_);
        if (n > 1) simd_batches_[list[i].begin] = n;
        for (std::size_t j = i; j < i + n; ++j)
          for (auto [call, close] : simd_calls(t_, list[j])) mark(call, close + 1, cur_);
        ++cur_;
        for (std::size_t j = i; j < i + n; ++j) {
          mark(list[j].begin, list[j].end, cur_);
          declare(list[j].begin, list[j].end - 1, cur_, true);
        }
        i += n - 1;
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
    plan.simd_batches = simd_batches_;
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

  // The regions whose text names `name` (a macro's, say).
  std::set<int> regions_naming(const std::string& name) const {
    std::set<int> regions;
    for (const Use& u : uses_)
      if (t_[u.token].text == name) regions.insert(u.region);
    return regions;
  }
  // The regions of the thread-private declarations of `name` at the body's
  // own scope (none when it has none there).
  std::set<int> regions_declaring(const std::string& name) const {
    std::set<int> regions;
    if (auto d = decls_.find(name); d != decls_.end())
      for (const Decl& x : d->second)
        if (!x.nested && !x.decl.threadgroup && !x.decl.constant) regions.insert(x.region);
    return regions;
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

  // The first token of the condition of the `?` at q in statement s: after
  // the nearest unmatched `(` or `[` before it, or an assignment, comma,
  // `?` or `:` at its own depth, or the statement's start.
  std::size_t condition_begin(const BodyStmt& s, std::size_t q) const {
    int depth = 0;
    for (std::size_t k = q; k-- > s.begin;) {
      const Token& x = t_[k];
      const bool assignment = x.kind == TokenKind::Punct && !x.text.empty() && x.text.back() == '=' &&
                              x.text != "==" && x.text != "!=" && x.text != "<=" && x.text != ">=";
      if (x.is_punct(")") || x.is_punct("]")) {
        ++depth;
      } else if (x.is_punct("(") || x.is_punct("[")) {
        if (depth == 0) return k + 1;
        --depth;
      } else if (depth == 0 && (assignment || x.is_punct(",") || x.is_punct("?") || x.is_punct(":") ||
                                x.is_ident("return"))) {
        return k + 1;
      }
    }
    return s.begin;
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
      // (A `?` whose condition every thread of the group evaluates alike,
      // `blocks == 1 ? sq : simd_sum(sq)` with a constant `blocks`, leaves
      // no thread out: each deposits, and all take the same arm.)
      const bool uniform_choice =
          x.is_punct("?") && is_uniform_condition(t_, condition_begin(s, k), k, names_);
      if (((x.is_punct("?") || x.is_punct("&&") || x.is_punct("||")) && !in_arguments(k) && !uniform_choice) ||
          x.is_ident("return"))
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
  std::size_t body_begin_, body_end_;
  const UniformNames& names_;
  const std::set<std::string>& changed_params_;
  const std::set<std::size_t>& uniform_names_;  // the uniform declarations' names (tokens)
  const SimdBatchBody batch_body_;
  std::map<std::size_t, std::size_t> simd_batches_;  // RegionsPlan::simd_batches
  std::vector<Use> uses_;
  std::map<std::string, std::vector<Decl>> decls_;
  std::vector<std::size_t> block_end_;
  std::set<std::size_t> uniform_, uniform_ifs_, branching_ifs_;
  int cur_ = 0;
};

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
  // A kernel's declaration: from `template <...>` (if any; `template <>`
  // for an explicit specialization), its attributes (`[[host_name(...)]]`,
  // `[[kernel]]`) or `kernel` to its body's end.
  auto declaration_of = [&](const ProgramKernel& k) {
    std::size_t open = index_at(k.body_begin), close = index_at(k.body_end - 1);
    std::size_t start = open;
    while (start > 0 && !t[start].is_ident("kernel")) --start;
    if (start > 0 && (t[start - 1].is_punct("[[") || t[start - 1].is_punct(",")))
      while (start > 0 && !t[start].is_punct("[[")) --start;  // the group holding `kernel`
    while (start > 0 && t[start - 1].is_punct("]]")) {        // the groups before it
      --start;
      while (start > 0 && !t[start].is_punct("[[")) --start;
    }
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
      // (The translation's own names begin with alloy_; a helper written out
      // in the body names its values alloy_inline_: cpu_inline_helpers.h.)
      const bool ours = t.text.rfind("alloy_", 0) == 0 && t.text.rfind("alloy_inline_", 0) != 0;
      if (t.is_ident("goto") || t.is_ident("co_return") || t.is_ident("co_await") || ours)
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
    Planner planner(toks, shape.begin, shape.end, names, changed, uniform.names);
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
      plan.rows = thread_rows(toks, plan.body, shape.begin, shape.end, names, uniform, constants);
    }
    // A macro that names a local of the body uses it wherever it is
    // expanded, which the frame's loads and stores do not see: a macro
    // expanded in a region other than the one declaring a local it names
    // (dflash-mlx's `#define STAGE_B(...)` of the body, naming locals
    // declared before a barrier and expanded after it) keeps the kernel off
    // regions; it runs on fibers or coroutines instead.
    // (The code has each #define's body lexed in place of the directive; a
    // function-like macro's own parameters are not names of the body.)
    for (const LexedText* text : {&lexed.source, &lexed.header}) {
      struct Directive {
        std::size_t begin, end;
        std::vector<std::string> params;
        std::set<int> expanded_in;  // the regions naming the macro
      };
      std::vector<Directive> directives;
      for (const Token& d : text->tokens) {
        TextRange body;
        std::string name;
        if (d.kind == TokenKind::Directive && define_body(text->text, d, body, &name))
          directives.push_back({d.begin, d.end, macro_parameters(text->text, d).value_or(std::vector<std::string>{}),
                                planner.regions_naming(name)});
      }
      for (const Token& m : text->code) {
        if (m.kind != TokenKind::Identifier) continue;
        for (const Directive& d : directives) {
          if (m.begin < d.begin || m.begin >= d.end ||
              std::find(d.params.begin(), d.params.end(), m.text) != d.params.end())
            continue;
          const std::set<int> declared = planner.regions_declaring(m.text);
          if (changed.count(m.text) || (!declared.empty() && !std::includes(declared.begin(), declared.end(),
                                                                            d.expanded_in.begin(),
                                                                            d.expanded_in.end())))
            throw NotRegions{"a macro names `" + m.text + "`, a local of the body, in a region that does not "
                             "declare it"};
        }
      }
    }
    for (const LexedText* text : {&lexed.source, &lexed.header})
      plan.opaque_macros.insert(text->macros_naming_anything.begin(), text->macros_naming_anything.end());
    for (const IncludedFile& f : lexed.includes)
      plan.opaque_macros.insert(f.lexed.macros_naming_anything.begin(), f.lexed.macros_naming_anything.end());
    return plan;
  } catch (const NotRegions& e) {
    why_not = e.why;
    return std::nullopt;
  }
}

}  // namespace alloy::msl
