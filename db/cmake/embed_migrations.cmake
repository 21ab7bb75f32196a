# cmake -DOUT=file.cpp -DFILES="a.sql;b.sql" -P embed_migrations.cmake
# Writes a .cpp defining loom::db::detail::embeddedMigrations(): every file as
# {version, name, sql}. The version is the leading number of the file name (0001_x.sql -> 1).
set(_body "")
foreach(f ${FILES})
  get_filename_component(_name ${f} NAME_WE)
  if(NOT _name MATCHES "^([0-9]+)_")
    message(FATAL_ERROR "migration ${f}: name must start with a number, e.g. 0004_x.sql")
  endif()
  math(EXPR _version "${CMAKE_MATCH_1}")
  file(READ ${f} _sql)
  if(_sql MATCHES "\\)loom_sql\"")
    message(FATAL_ERROR "migration ${f} contains the raw-string delimiter )loom_sql\"")
  endif()
  string(APPEND _body "        {${_version}, \"${_name}\", R\"loom_sql(${_sql})loom_sql\"},\n")
endforeach()
set(_content "// Generated from db/migrations/*.sql by db/cmake/embed_migrations.cmake. Do not edit.
#include \"loom/db/migrations.hpp\"

namespace loom::db::detail {

const std::vector<Migration>& embeddedMigrations() {
    static const std::vector<Migration> kMigrations = {
${_body}    };
    return kMigrations;
}

}  // namespace loom::db::detail
")
# Rewrite only on change, so an unrelated rebuild does not recompile the file.
if(EXISTS ${OUT})
  file(READ ${OUT} _old)
  if(_old STREQUAL _content)
    return()
  endif()
endif()
file(WRITE ${OUT} "${_content}")
