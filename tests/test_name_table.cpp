// NameTable: parsing, messages and comma lists of the one table per name list.
#include <doctest/doctest.h>

#include "base/name_table.hpp"

namespace {

enum class Fruit { apple, pear, plum };
constexpr gpumem::Named<Fruit> kFruitRows[] = {
    {"apple", Fruit::apple, "red or green"},
    {"pear", Fruit::pear, "pear-shaped"},
    {"plum", Fruit::plum, "purple"},
};
constexpr gpumem::NameTable<Fruit> kFruits{"fruit", kFruitRows};

}  // namespace

TEST_CASE("name table: parse, names and the unknown-name message") {
    static_assert(kFruits.size() == 3);
    CHECK(kFruits.parse("pear") == Fruit::pear);
    CHECK(kFruits.name_of(Fruit::plum) == "plum");
    CHECK(kFruits.names() == "apple, pear or plum");
    CHECK(kFruits.names(", ") == "apple, pear, plum");
    CHECK_THROWS_WITH_AS(kFruits.parse("kiwi"), "unknown fruit 'kiwi' (expected apple, pear or plum)", gpumem::UsageError);
    CHECK_THROWS_AS(kFruits.parse(""), gpumem::UsageError);
}

TEST_CASE("name table: comma lists, all, repeats and empties") {
    using V = std::vector<Fruit>;
    CHECK(kFruits.parse_list("plum, apple") == V{Fruit::plum, Fruit::apple});
    CHECK(kFruits.parse_list("all") == V{Fruit::apple, Fruit::pear, Fruit::plum});
    CHECK_THROWS_WITH_AS(kFruits.parse_list("pear,pear"), "fruit 'pear' named twice", gpumem::UsageError);
    CHECK(kFruits.parse_list("pear,pear", {true, true, false}) == V{Fruit::pear});
    CHECK_THROWS_AS(kFruits.parse_list("all,pear"), gpumem::UsageError);
    // With repeats allowed, `all` may stand among names: every entry not named before it, in table order.
    CHECK(kFruits.parse_list("plum,all", {true, true, false}) == V{Fruit::plum, Fruit::apple, Fruit::pear});
    CHECK(kFruits.parse_list("all,plum", {true, true, false}) == V{Fruit::apple, Fruit::pear, Fruit::plum});
    CHECK_THROWS_AS(kFruits.parse_list("pear,,plum"), gpumem::UsageError);
    CHECK_THROWS_AS(kFruits.parse_list(""), gpumem::UsageError);
    CHECK(kFruits.parse_list("", {true, false, true}).empty());
    CHECK_THROWS_AS(kFruits.parse_list("all", {false, false, false}), gpumem::UsageError);
    // An option given several times, each a list.
    CHECK(kFruits.parse_list(std::vector<std::string>{"plum", "apple,pear"}) == V{Fruit::plum, Fruit::apple, Fruit::pear});
}

TEST_CASE("name table: the value-free view that --list prints") {
    const gpumem::NameListView view = gpumem::view_of(kFruits);
    CHECK(view.what == "fruit");
    REQUIRE(view.rows.size() == 3);
    CHECK(view.rows[1].first == "pear");
    CHECK(view.rows[1].second == "pear-shaped");
}
